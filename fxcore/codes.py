"""The diagnostic codes' documentation, from ``codes.md`` shipped in this package: what
``fx-lsp explain`` prints, what SARIF rules carry, and what the README's "Diagnostic codes"
section copies."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources

README_URL = "https://github.com/fx-lsp/fx-lsp"


@dataclass(frozen=True)
class CodeDoc:
    code: str
    #: The first sentence, such as "Control flow on a traced value."
    title: str
    #: The section's Markdown, without its heading.
    text: str


def help_url(code: str) -> str:
    """The README section documenting ``code`` (anchors like ``#fx002``)."""
    return f"{README_URL}#{code.lower()}"


@functools.cache
def documentation() -> dict[str, CodeDoc]:
    text = resources.files("fxcore").joinpath("codes.md").read_text(encoding="utf-8")
    docs = {}
    for section in re.split(r"^### ", text, flags=re.MULTILINE)[1:]:
        code, _, body = section.partition("\n")
        body = body.strip()
        bold = re.match(r"\*\*((?:`[^`]*`|[^`*])+)\*\*", body)
        title = " ".join((bold.group(1) if bold else body.split("\n\n")[0]).split())
        title = title.rstrip(":.") + "."
        docs[code.strip()] = CodeDoc(code.strip(), title, body + "\n")
    return docs
