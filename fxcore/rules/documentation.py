"""The diagnostic codes' documentation, from the registry (``fxcore.rules``): what
``fx-lsp explain`` prints, what SARIF rules carry, and the Markdown of ``docs/codes.md``,
which ``python -m fxcore.rules.documentation --write`` regenerates."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from fxcore import rules
from fxcore.rules.compile import GRAPH_BREAK_FAMILY_DOCS, GRAPH_BREAK_RULES

README_URL = "https://github.com/fx-lsp/fx-lsp"
CODES_MARKDOWN_HEADER = (
    "<!-- Generated from fxcore/rules by `python -m fxcore.rules.documentation --write`: edit\n"
    "     the rules, not this file. `fx-lsp explain` and SARIF rules show the same text. -->\n\n")


@dataclass(frozen=True)
class CodeDoc:
    code: str
    #: The first sentence, such as "Control flow on a traced value."
    title: str
    #: The section's Markdown, without its heading.
    text: str


def help_url(code: str) -> str:
    """The page documenting ``code``: its own (PyTorch's page of a graph break), else the
    README section (anchors like ``#fx002``)."""
    rule = rules.BY_CODE.get(code)
    return rule.url if rule is not None and rule.url else f"{README_URL}#{code.lower()}"


def documentation() -> dict[str, CodeDoc]:
    """Each registered code's documentation, in the order of codes; read from the registry
    at each call, so that a code registered later (a test's) is documented too."""
    return {rule.code: CodeDoc(rule.code, rule.title, rule.docs)
            for rule in sorted(rules.RULES, key=lambda rule: rule.code)}


def codes_markdown() -> str:
    """Every code's section (``### FX001`` and its documentation), in the order of codes;
    the graph breaks generated from torch's registry as one ``### GBnnnn`` section pointing
    to it (hundreds of entries, and they follow the installed torch)."""
    generated = {rule.code for rule in GRAPH_BREAK_RULES}
    own = "\n".join(f"### {doc.code}\n\n{doc.text}" for doc in documentation().values()
                    if doc.code not in generated)
    return f"{own}\n### GBnnnn\n\n{GRAPH_BREAK_FAMILY_DOCS}"


def main() -> None:
    parser = argparse.ArgumentParser(description="Write docs/codes.md from the registry of "
                                     "codes.")
    parser.add_argument("--write", action="store_true", help="write them (else: check them)")
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[2])
    arguments = parser.parse_args()
    expected = {arguments.root / "docs" / "codes.md": CODES_MARKDOWN_HEADER + codes_markdown()}
    stale = [path for path, text in expected.items()
             if not path.exists() or path.read_text(encoding="utf-8") != text]
    if arguments.write:
        for path in stale:
            path.write_text(expected[path], encoding="utf-8")
    elif stale:
        raise SystemExit(f"out of date: {', '.join(map(str, stale))} "
                         "(python -m fxcore.rules.documentation --write)")


if __name__ == "__main__":
    main()
