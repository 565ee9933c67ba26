"""Workspace text (file names, messages, source lines, config keys, argument reprs) made inert
for where fx-lsp prints it: a terminal or CI log, JUnit XML, and hover Markdown. Such text is
data; printed raw it could move the cursor, write the clipboard (OSC 52), start a GitHub
workflow command, break an XML parser or render as a link."""

from __future__ import annotations

import re

#: C0 controls but tab (shown as Unicode's control pictures, ``\x1b`` -> ``␛``, as ruff shows
#: them), DEL, C1 controls (``\x9b`` is CSI on some terminals), the line and paragraph
#: separators, bidirectional overrides and isolates (they reorder what is shown), and lone
#: surrogates (undecodable bytes of a file name, which stdout cannot encode).
_UNSAFE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"
                     "\ud800-\udfff]")

#: The runner of GitHub Actions reads ``##[command]`` anywhere in a log line (its legacy
#: workflow command syntax), not only at the start as it does ``::command::``.
_LEGACY_COMMAND = "##["


def _shown(character: str) -> str:
    code = ord(character)
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "\u2421"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` on one line with every control character (newlines included) visible."""
    return _UNSAFE.sub(lambda match: _shown(match.group()), text)


def terminal(text: str) -> str:
    """``text`` as one line a terminal and a CI log show as it is: ``visible``, and no
    legacy GitHub workflow command in it."""
    return visible(text).replace(_LEGACY_COMMAND, "##\\x5b")


def terminal_lines(text: str) -> list[str]:
    """``text``'s lines, each made safe by ``terminal``: for output that keeps a message's
    line breaks (``\\r`` is not one: it would let a line overwrite what precedes it)."""
    return [terminal(line) for line in text.split("\n")]


def log_line_start(text: str) -> str:
    """``text`` at the start of a CI log line: the runner takes a line that begins with
    ``::`` (after spaces) as a workflow command, so such a path gets a ``./`` before it."""
    return f"./{text}" if text.lstrip().startswith("::") else text


#: Characters XML 1.0 cannot hold, even as character references.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """``text`` with each character XML 1.0 cannot hold shown as ``visible`` shows it."""
    return _NOT_XML.sub(lambda match: _shown(match.group()), text)


def label(text: str) -> str:
    """``text`` for a code lens title: ``visible``, and with ``$(name)``, which VS Code draws
    as an icon there, escaped as VS Code's own ``escapeIcons`` escapes it."""
    return visible(text).replace("$(", "\\$(")


# -- Markdown ------------------------------------------------------------------------------


#: Characters that start inline Markdown: emphasis, code, links and images, raw HTML and
#: autolinks, entities, table cells, strikethrough, and headings or quotes at a line start.
#: A backslash before any ASCII punctuation shows it as itself (CommonMark 2.4).
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_\[\]<>&!|~#])")


def markdown_text(text: str) -> str:
    """``text`` shown as plain text in Markdown, on one line."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", visible(text))


def _longest_run(text: str, character: str) -> int:
    runs = re.findall(f"{re.escape(character)}+", text)
    return max((len(run) for run in runs), default=0)


def code_span(text: str) -> str:
    """``text`` as a code span on one line that its own backticks cannot end (CommonMark
    6.1)."""
    text = visible(text)
    fence = "`" * (_longest_run(text, "`") + 1)
    padded = f" {text} " if text.startswith("`") or text.endswith("`") else text
    return f"{fence}{padded}{fence}"


def table_code(text: str) -> str:
    """``code_span`` for a table cell: a ``|`` even in a code span ends the cell unless
    escaped (GFM 4.10)."""
    return code_span(text).replace("|", "\\|")


def code_block(text: str, language: str = "") -> str:
    """``text`` as a fenced code block that no line of it can close (CommonMark 4.5)."""
    fence = "`" * max(3, _longest_run(text, "`") + 1)
    return f"{fence}{language}\n{text}\n{fence}"


def message_markdown(text: str) -> str:
    """A message that marks code with backticks (as fx-lsp's messages do) as Markdown: each
    backticked part a code span, the rest plain text. Backticks from workspace text may
    pair up wrongly; then a part shows as code instead of text, but nothing in it renders."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: nothing is code
        return markdown_text(text)
    return "".join(markdown_text(part) if index % 2 == 0
                   else code_span(part) if part else "\\`\\`"
                   for index, part in enumerate(parts))
