"""``explain``: the documentation of a code fx-lsp reports (``fxcore.rules.documentation``)."""

from __future__ import annotations

from fxcore.rules.documentation import CodeDoc, documentation


def explain(code: str) -> CodeDoc | None:
    """The documentation of ``code`` (any case, such as ``fx002``); None for a code fx-lsp
    does not report (``known_codes`` are those it does)."""
    return documentation().get(code.strip().upper())


def known_codes() -> list[str]:
    return list(documentation())
