"""``explain``: the documentation of a code fx-lsp reports (``fxcore.rules.documentation``),
one code's or every code's (``fx-lsp explain --all``)."""

from __future__ import annotations

from dataclasses import dataclass

from fxcore import rules
from fxcore.rules.documentation import CodeDoc, code_page, documentation, help_url
from fxcore.rules.rule import Rule


@dataclass(frozen=True)
class CodeRecord:
    """All the registry says of a code, for ``fx-lsp explain --output-format json``."""

    code: str
    #: The first sentence of its documentation, such as "Control flow on a traced value.".
    summary: str
    #: "error", "warning" or "hint".
    severity: str
    #: Information about a class rather than a problem in its code (such as FX103).
    information: bool
    #: The capture mode whose failures it reports, or "any".
    mode: str
    #: The ``kind`` of the failures and hints it reports in JSON reports.
    kinds: tuple[str, ...]
    #: The page an editor links to.
    url: str
    #: The Markdown ``fx-lsp explain CODE`` prints: the code's page on the documentation site.
    explanation: str


def explain(code: str) -> CodeDoc | None:
    """The documentation of ``code`` (any case, such as ``fx002``); None for a code fx-lsp
    does not report (``known_codes`` are those it does)."""
    return documentation().get(code.strip().upper())


def _record(rule: Rule) -> CodeRecord:
    return CodeRecord(code=rule.code, summary=rule.title, severity=rule.severity,
                      information=rule.information, mode=rule.mode, kinds=rule.kinds,
                      url=help_url(rule.code), explanation=code_page(rule))


def explain_record(code: str) -> CodeRecord | None:
    """What the registry says of ``code`` (any case); None for a code fx-lsp does not
    report."""
    rule = rules.BY_CODE.get(code.strip().upper())
    return _record(rule) if rule is not None else None


def all_records() -> list[CodeRecord]:
    """Every code fx-lsp reports, in the order of codes (``known_codes``'): this project's
    own, then the graph breaks of the installed torch."""
    return [_record(rules.BY_CODE[code]) for code in known_codes()]


def known_codes() -> list[str]:
    """Every code fx-lsp reports, in the order ``fx-lsp explain --all`` lists them."""
    return list(documentation())
