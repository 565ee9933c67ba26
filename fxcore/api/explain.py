"""``explain``: the documentation of a code fx-lsp reports (``fxcore.rules.documentation``)."""

from __future__ import annotations

from fxcore import rules
from fxcore.rules.documentation import CodeDoc, code_page, documentation


def explain(code: str) -> CodeDoc | None:
    """The documentation of ``code`` (any case, such as ``fx002``); None for a code fx-lsp
    does not report (``known_codes`` are those it does)."""
    return documentation().get(code.strip().upper())


def explain_page(code: str) -> str | None:
    """The Markdown of ``code``'s page on the documentation site, which ``fx-lsp explain``
    prints; None for a code fx-lsp does not report."""
    rule = rules.BY_CODE.get(code.strip().upper())
    return code_page(rule) if rule is not None else None


def known_codes() -> list[str]:
    return list(documentation())
