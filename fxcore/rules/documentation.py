"""The diagnostic codes' documentation, from the registry (``fxcore.rules``): the page of each
code on the documentation site (``code_page``), which ``fx-lsp explain`` prints too, the
codes' index and the graph breaks' one page (``code_pages``, rendered by the site's build hook,
``scripts/mkdocs_hooks.py``), and the address each diagnostic links to (``help_url``)."""

from __future__ import annotations

import html
import os
from dataclasses import dataclass

from fxcore import rules
from fxcore.rules.compile import GRAPH_BREAK_FAMILY_DOCS, GRAPH_BREAK_RULES
from fxcore.rules.rule import Rule

#: The documentation site's address: the one place it is written (mkdocs.yml's ``site_url``
#: is the same, a test keeps them equal). Each code's page is ``<address>codes/<CODE>/``.
DOCS_URL = "https://fx-lsp.github.io/fx-lsp/"
#: The environment variable that replaces ``DOCS_URL``, for a copy of the site served
#: elsewhere (mkdocs.yml reads it too).
DOCS_URL_VARIABLE = "FX_LSP_DOCS_URL"
#: The page of the graph breaks, PyTorch's ``GBnnnn`` codes: one for all of them.
GRAPH_BREAK_PAGE = "GBnnnn"


@dataclass(frozen=True)
class CodeDoc:
    code: str
    #: The first sentence, such as "Control flow on a traced value."
    title: str
    #: The registry's Markdown, without a heading.
    text: str


def docs_url() -> str:
    """The documentation site's address, ending in ``/``: ``DOCS_URL`` unless
    ``FX_LSP_DOCS_URL`` says otherwise."""
    configured = os.environ.get(DOCS_URL_VARIABLE, "").strip()
    return configured.rstrip("/") + "/" if configured else DOCS_URL


def page_name(code: str) -> str:
    """The page documenting ``code`` on the site: its own, or the graph breaks' one."""
    return GRAPH_BREAK_PAGE if code.startswith("GB") else code


def help_url(code: str) -> str:
    """The page an editor or a SARIF viewer opens for ``code``: a graph break's page on
    PyTorch's site (more precise than the family's page here), else the code's page on this
    project's site (MkDocs' directory URLs: ``codes/FX002/``)."""
    rule = rules.BY_CODE.get(code)
    if rule is not None and rule.url:
        return rule.url
    return f"{docs_url()}codes/{page_name(code)}/"


def documentation() -> dict[str, CodeDoc]:
    """Each registered code's documentation, in the order of codes; read from the registry
    at each call, so that a code registered later (a test's) is documented too."""
    return {rule.code: CodeDoc(rule.code, rule.title, rule.docs)
            for rule in sorted(rules.RULES, key=lambda rule: rule.code)}


def _facts(rule: Rule) -> str:
    severity = "information" if rule.information else rule.severity
    kinds = ", ".join(f"`{kind}`" for kind in rule.kinds)
    return f"Severity: {severity}. Capture mode: {rule.mode}. Kind in JSON reports: {kinds}."


def code_page(rule: Rule) -> str:
    """A code's page: what happened (with examples), how to fix it (with the quick fixes it
    is offered), from the registry's text. ``fx-lsp explain`` prints the same Markdown."""
    happened, _, fix = rule.docs.partition("\nFix: ")
    fix = fix[:1].upper() + fix[1:] if fix[:1].islower() else fix
    page = (f"# {rule.code}: {rule.title.rstrip('.')}\n\n{_facts(rule)}\n\n"
            f"## What happened\n\n{happened.strip()}\n")
    return page + (f"\n## How to fix\n\n{fix.strip()}\n" if fix else "")


def _cell(markdown: str) -> str:
    """``markdown`` for a table's cell: one line, no column break."""
    return " ".join(markdown.split()).replace("|", "\\|")


def _plain_cell(text: str) -> str:
    """Plain ``text`` (torch's wording) for a table's cell, read as neither HTML nor
    emphasis."""
    return _cell(html.escape(text, quote=False).replace("*", "\\*").replace("_", "\\_"))


def codes_index() -> str:
    """The codes' index: each code of this project, then the graph breaks' one row."""
    rows = [f"| [{rule.code}]({rule.code}.md) | {_cell(rule.title)} | "
            f"{'information' if rule.information else rule.severity} | {rule.mode} |"
            for rule in sorted(rules.RULES, key=lambda rule: rule.code)
            if not rule.code.startswith("GB")]
    rows.append(f"| [{GRAPH_BREAK_PAGE}]({GRAPH_BREAK_PAGE}.md) | A `torch.compile` graph "
                "break, under PyTorch's own code. | warning | compile |")
    return ("# Diagnostic codes\n\nEvery code fx-lsp reports, generated from its registry "
            "(`fxcore/rules`). `fx-lsp explain CODE` prints a code's page in the terminal, and "
            "each diagnostic links to its page. `select`, `ignore` and `per-file-ignores` "
            "choose which are reported ([Configuration](../configuration.md#what-is-reported))."
            "\n\n| Code | What happened | Severity | Mode |\n| --- | --- | --- | --- |\n"
            + "\n".join(rows) + "\n")


def graph_break_page() -> str:
    """The graph breaks' one page: the family's text and each break of the installed torch,
    linking to PyTorch's page of it."""
    def break_type(rule: Rule) -> str:  # the docs' first line: **Graph break: <type>.**
        return rule.docs.split("\n", 1)[0].removeprefix("**Graph break: ").removesuffix(".**")
    rows = [f"| {rule.code} | {_plain_cell(break_type(rule))} | "
            f"[PyTorch's page]({rule.url}) |" for rule in GRAPH_BREAK_RULES]
    table = ("\n## The graph breaks of the installed torch\n\n| Code | Break | Page |\n"
             "| --- | --- | --- |\n" + "\n".join(rows) + "\n") if rows else ""
    return (f"# {GRAPH_BREAK_PAGE}: torch.compile graph breaks\n\n"
            f"{GRAPH_BREAK_FAMILY_DOCS}{table}")


def code_pages() -> dict[str, str]:
    """The site's pages of codes, by path under ``docs/``: ``codes/index.md``, one page per
    code of this project, and ``codes/GBnnnn.md`` for the graph breaks."""
    pages = {"codes/index.md": codes_index(),
             f"codes/{GRAPH_BREAK_PAGE}.md": graph_break_page()}
    pages.update({f"codes/{rule.code}.md": code_page(rule) for rule in rules.RULES
                  if not rule.code.startswith("GB")})
    return pages
