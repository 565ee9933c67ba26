"""Hover text from the latest results: never waits for a trace. Workspace text (names,
messages, argument values, generated code, paths) goes in through ``fx_lsp.escaping``, so
none of it renders as a link, an image or HTML."""

from __future__ import annotations

from lsprotocol import types

from fx_lsp.escaping import code_block, code_span, markdown_text, message_markdown, table_code
from fx_lsp.features import positions
from fx_lsp.features.code_actions import entry_fixes
from fx_lsp.features.diagnostics import CellWords, line_words, no_cells, short_path
from fx_lsp.features.snapshot import DocumentSnapshot
from fx_lsp.verdicts_by_mode import modes_line, verdicts_of
from fxcore.model.results import ModuleResult, first_verdicts
from fxcore.reporting.parent_arguments import traced_instance

#: A hover shows at most this many graph nodes of a line and lines of generated code: a line
#: that produced 50,000 nodes would otherwise send megabytes no one reads.
MAX_NODE_ROWS = 50
MAX_CODE_LINES = 200

_BUILT_ON = {
    "meta": "built on the meta device (no weights allocated)",
    "cpu": "built on CPU (the constructor failed on the meta device)",
    "factory": "built by the configured factory",
}


def arguments_sentence(module: ModuleResult) -> str | None:
    """Which instance the verdict is about, when it is not the class built on its own."""
    found = traced_instance(module)
    if found is None:
        return None
    by_parent, words = found
    return f"Traced as built by {code_span(words)}." if by_parent \
        else f"Traced with {markdown_text(words)}."


def _generated_code(code: str) -> str:
    lines = code.strip().splitlines()
    shown = "\n".join(lines[:MAX_CODE_LINES])
    more = len(lines) - MAX_CODE_LINES
    note = f"\n\n... and {more} more lines (FX: Show Generated Forward Code)" if more > 0 else ""
    return code_block(shown, "python") + note


def _other_modes_code(shown: ModuleResult, verdicts: list[ModuleResult]) -> list[str]:
    """The graph code each other mode captured (an exported program's ATen graph, say): the
    hover's verdict shows only its own mode's."""
    return [f"{markdown_text(other.mode)} graph:\n\n{_generated_code(other.generated_code)}"
            for other in verdicts
            if other is not shown and other.status == "traceable" and other.generated_code]


def _other_modes_not_traced(shown: ModuleResult, verdicts: list[ModuleResult]) -> list[str]:
    """Why each other mode did not check the class (an operator the meta device cannot run,
    no example inputs): the hover's verdict says only its own mode's."""
    return [f"{markdown_text(other.mode)}: **{markdown_text(other.class_name)}** was not "
            f"traced: {_message_markdown(other.reason)}"
            for other in verdicts
            if other is not shown and other.status == "not-traced" and other.reason]


_INPUTS_FROM = {"config": "configured", "annotation": "from forward's annotations",
                "inferred": "inferred from the first layers that use them",
                "parent": "the ones its parent passes it",
                "example": "the example its code gives"}


def shapes_markdown(module: ModuleResult) -> str | None:
    """The example inputs, the output shape, or why there are no shapes."""
    if module.inputs is not None:
        given = ", ".join(code_span(f"{name}: {spec}")
                          for name, spec in module.inputs.tensors.items())
        chosen = f"; {message_markdown(module.inputs.note)}" if module.inputs.note else ""
        text = f"Inputs {given} ({_INPUTS_FROM[module.inputs.origin]}{chosen})"
        if module.output_shape:
            text += f" -> output {code_span(module.output_shape)}"
        note = f" {message_markdown(module.shapes_note)}" if module.shapes_note else ""
        return text + "." + note
    return message_markdown(module.shapes_note) if module.shapes_note else None


def module_markdown(module: ModuleResult, document: str, cell_words: CellWords = no_cells
                    ) -> str:
    """Everything known about one traced class."""
    parts = [_verdict_markdown(module, document, cell_words), shapes_markdown(module),
             arguments_sentence(module)]
    return "\n\n".join(part for part in parts if part)


def _verdict_markdown(module: ModuleResult, document: str, cell_words: CellWords) -> str:
    name = markdown_text(module.class_name)
    if module.status == "traceable":
        parts = [
            f"**{name}** is FX-traceable: {module.node_count} nodes, "
            f"{_BUILT_ON.get(module.instantiated_on or '', 'built')}, "
            f"traced in {module.trace_seconds:.2f} s.",
            _generated_code(module.generated_code or ""),
        ]
        parts += [f"- {hint.code}: {message_markdown(hint.message)}" for hint in module.hints]
        return "\n\n".join(parts)
    if module.status == "not-traced":
        return f"**{name}** was not traced: {_message_markdown(module.reason or '')}"
    count = len(module.failures)
    lines = [
        f"**{name}** is not FX-traceable: {count} failure{'s' * (count != 1)}",
        "",
    ]
    lines += [
        f"- `{failure.code}` {markdown_text(short_path(failure.path, document))}:"
        f"{line_words(failure.path, failure.line, cell_words)}: "
        + _message_markdown(failure.message).replace("\n", "\n  ")
        for failure in module.failures
    ]
    return "\n".join(lines)


def _message_markdown(message: str) -> str:
    """A failure message as Markdown: its indented lines (a worker's last output) as a
    fenced block, so that they keep their lines instead of running into one paragraph; the
    other lines as ``escaping.message_markdown``."""
    out: list[str] = []
    quoted: list[str] = []
    for line in message.splitlines():
        if line.startswith("    "):
            quoted.append(line[4:])
            continue
        if quoted:
            out.append(code_block("\n".join(quoted), "text"))
            quoted = []
        out.append(message_markdown(line))
    if quoted:
        out.append(code_block("\n".join(quoted), "text"))
    return "\n".join(out)


def capture_notes_markdown(verdicts: list[ModuleResult]) -> str | None:
    """What a mode could not do on this torch (a private hook it lacks, say), per mode: the
    verdict may then be incomplete."""
    notes = [f"- {markdown_text(verdict.mode)}: {message_markdown(note)}"
             for verdict in verdicts for note in verdict.capture_notes]
    return "Capture notes:\n" + "\n".join(notes) if notes else None


def _on_name_or_forward(module: ModuleResult, line: int, column: int) -> bool:
    if module.line == line and module.column <= column <= module.end_column:
        return True
    return module.forward is not None and module.forward.line == line


def contains(r: types.Range, position: types.Position) -> bool:
    start, end = (r.start.line, r.start.character), (r.end.line, r.end.character)
    return start <= (position.line, position.character) <= end


def lists_fixes(snapshot: DocumentSnapshot, position: types.Position) -> bool:
    """The hover at ``position`` is a diagnostic's, with its quick fixes: planning them parses
    the file (seconds for a big one; cached per text)."""
    return any(entry.failure is not None and contains(entry.diagnostic.range, position)
               for entry in snapshot.entries)


def hover(snapshot: DocumentSnapshot, position: types.Position) -> types.Hover | None:
    """The class on whose name or ``forward`` the position is, else the diagnostic there and
    its quick fixes, else the graph nodes of the line."""
    path, own, others, entries = snapshot.path, snapshot.result, snapshot.others, snapshot.entries
    line, column = positions.from_lsp(snapshot.lines, position, snapshot.encoding)
    for module in own.modules if own else []:
        if _on_name_or_forward(module, line, column):
            verdicts = verdicts_of(own.modules, module) if own else [module]
            text = module_markdown(module, path, snapshot.files.cell_words)
            if len(verdicts) > 1:
                text = "\n\n".join([markdown_text(modes_line(verdicts)), text,
                                     *_other_modes_not_traced(module, verdicts),
                                     *_other_modes_code(module, verdicts)])
            notes = capture_notes_markdown(verdicts)
            if notes:
                text += "\n\n" + notes
            return types.Hover(
                contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=text)
            )
    for entry in entries:
        failure = entry.failure
        if failure is None or not contains(entry.diagnostic.range, position):
            continue
        text = [
            f"**{failure.code}** ({failure.kind.replace('-', ' ')}): "
            + _message_markdown(failure.message)
        ]
        if entry.module is not None:
            text.append(f"Tracing {code_span(entry.module.class_name)} stops here.")
        titles = [fix.title for fix in entry_fixes(entry, snapshot.files)]
        if titles:
            text.append("Quick fixes:\n" + "\n".join(f"- {message_markdown(title)}"
                                                     for title in titles))
        return types.Hover(
            contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value="\n\n".join(text)),
            range=entry.diagnostic.range,
        )
    rows: dict[str, None] = {}
    for result in [own, *others] if own else others:
        for module in first_verdicts(result.modules):
            for node in module.line_nodes.get((path, line), []):
                shape = table_code(node.shape) if node.shape else ""
                row = (f"| {markdown_text(module.class_name)} | {table_code(node.name)} "
                       f"| {node.op} | {table_code(node.target)} | {shape} |")
                rows[row] = None
    if not rows:
        return None
    shown = list(rows)[:MAX_NODE_ROWS]
    table = "| class | node | op | target | shape |\n|---|---|---|---|---|\n" + "\n".join(shown)
    if len(rows) > len(shown):
        table += f"\n\n... and {len(rows) - len(shown)} more nodes"
    return types.Hover(
        contents=types.MarkupContent(
            kind=types.MarkupKind.Markdown, value=f"FX graph nodes from this line:\n\n{table}"
        )
    )
