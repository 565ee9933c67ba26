"""Writing an edit of a notebook's module back into its cells: only the changed cells'
``source`` values are rewritten, in the shape they had."""

from __future__ import annotations

import difflib
import json
import re

from fxcore.workspace.kept_bytes import kept_text
from fxcore.workspace.notebook.cells import UTF8_BOM_CHARACTER, split_cell_lines
from fxcore.workspace.notebook.module_builder import notebook_module_of_json
from fxcore.workspace.parsing import ast_of


class NotebookEditError(ValueError):
    """An edit of a notebook's module that cannot be put into its cells; the message says
    why."""


def edit_notebook_json(raw: str, new_module_text: str) -> str:
    """The notebook JSON ``raw`` with the cells changed as ``new_module_text`` changes its
    module (``build_notebook_module``): every changed line goes into the cell it came from,
    inserted lines after the line before them (a ``torch.fx.wrap`` after the imports goes into
    the imports cell). Only the changed cells' ``source`` values are rewritten, in the shape
    they had (a list of lines or one string, laid out as before, each line with the line end
    it had); outputs, metadata and the rest of the text stay byte for byte."""
    module = notebook_module_of_json(raw)
    if module is None or module.cells is None:
        raise NotebookEditError("the file is not a notebook's JSON")
    old_lines = module.text.splitlines()
    new_lines = new_module_text.splitlines()
    statement_starts = _statement_starts(new_module_text)
    cell_lines = {index: split_cell_lines(cell.source)
                  for index, cell in enumerate(module.cells.cells)}
    # (cell, first cell line replaced (1-based), how many replaced, the new lines)
    changes: list[tuple[int, int, int, list[str]]] = []
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        inserted = new_lines[j1:j2]
        if i1 == i2:  # an insertion: after the line before it, else before the first line
            if 0 < i1 < len(old_lines) and module.line_map[i1 - 1][0] != module.line_map[i1][0] \
                    and statement_starts.get(j2 + 1, j2 + 1) <= j1 + 1:
                # Lines that open the statement after them (a decorator on a ``def`` that
                # starts a cell) go into that statement's cell, before it.
                cell, line = module.line_map[i1]
                changes.append((cell, line, 0, inserted))
            elif i1 > 0:
                cell, line = module.line_map[i1 - 1]
                changes.append((cell, line + 1, 0, inserted))
            elif module.line_map:
                cell, line = module.line_map[0]
                changes.append((cell, line, 0, inserted))
            else:
                raise NotebookEditError("the notebook has no code that is checked")
            continue
        places = module.line_map[i1:i2]
        cell, first = places[0]
        if any(place != (cell, first + offset) for offset, place in enumerate(places)):
            raise NotebookEditError(
                f"an edit spans lines that are apart in the notebook (cell {cell + 1})")
        if any(cell_lines[cell][line - 1] != old_lines[module_line - 1]
               for module_line, (_, line) in enumerate(places, i1 + 1)):
            raise NotebookEditError(f"an edit changes an IPython line of cell {cell + 1}")
        changes.append((cell, first, len(places), inserted))
    if not changes:
        return raw
    for cell, first, count, inserted in sorted(changes, key=lambda change: change[:2],
                                               reverse=True):
        cell_lines[cell][first - 1:first - 1 + count] = inserted
    changed = {cell for cell, *_ in changes}
    # Each line keeps the line end it had in its cell (a cell written on Windows: "\r\n").
    return _replace_sources(raw, {cell: kept_text(module.cells.cells[cell].source,
                                                  "\n".join(cell_lines[cell]))
                                  for cell in changed})


def _statement_starts(text: str) -> dict[int, int]:
    """For each top-level statement of ``text``, the line of its ``def``/``class`` keyword (or
    its first line) -> the first line of the whole statement, its decorators included; empty
    when ``text`` does not parse."""
    try:
        tree = ast_of(text)
    except SyntaxError:
        return {}
    starts: dict[int, int] = {}
    for statement in tree.body:
        decorators = getattr(statement, "decorator_list", [])
        starts[statement.lineno] = min([statement.lineno]
                                       + [decorator.lineno for decorator in decorators])
    return starts


def _replace_sources(raw: str, sources: dict[int, str]) -> str:
    """``raw`` with ``cells[index].source`` of each index replaced by the text given."""
    spans = _source_spans(raw)
    ensure_ascii = not re.search(r"[^\x00-\x7f]", raw)
    for index in sorted(sources, reverse=True):
        if index not in spans:
            raise NotebookEditError(f"cell {index + 1} has no source to edit")
        start, end = spans[index]
        raw = raw[:start] + _source_json(raw[start:end], sources[index], ensure_ascii) \
            + raw[end:]
    return raw


def _source_json(old: str, source: str, ensure_ascii: bool) -> str:
    """``source`` as a cell's ``source`` value laid out as ``old`` was: one string, or a list
    of lines (each but the last ending with a newline, as nbformat writes them) on their own
    lines indented as before, or on one line."""
    if not old.startswith("["):
        return json.dumps(source, ensure_ascii=ensure_ascii)
    lines = source.splitlines(keepends=True)
    items = [json.dumps(line, ensure_ascii=ensure_ascii) for line in lines]
    layout = re.match(r"\[(\s*)", old)
    opening = layout.group(1) if layout else ""
    if "\n" not in opening:
        return "[" + ", ".join(items) + "]"
    closing = re.search(r"(\s*)\]$", old)
    return "[" + opening + ("," + opening).join(items) + (closing.group(1) if closing else "") \
        + "]"


def _source_spans(raw: str) -> dict[int, tuple[int, int]]:
    """Where each cell's ``source`` value is in the notebook JSON ``raw``: index -> (start,
    end) character offsets, found by walking the JSON with the standard decoder."""
    decoder = json.JSONDecoder()
    whitespace = re.compile(r"\s*")

    def skip(position: int) -> int:
        match = whitespace.match(raw, position)
        return match.end() if match else position

    def members(position: int) -> list[tuple[str, int, int]]:
        """The (key, value start, value end) of the object starting at ``position``."""
        if raw[position] != "{":
            raise NotebookEditError("the notebook's JSON is not laid out as expected")
        found = []
        position = skip(position + 1)
        if raw[position] == "}":
            return found
        while True:
            key, position = decoder.raw_decode(raw, position)
            position = skip(skip(position) + 1)  # the colon
            _, end = decoder.raw_decode(raw, position)
            found.append((key, position, end))
            position = skip(end)
            if raw[position] == "}":
                return found
            position = skip(position + 1)  # the comma

    spans: dict[int, tuple[int, int]] = {}
    for key, start, _ in members(skip(1 if raw.startswith(UTF8_BOM_CHARACTER) else 0)):
        if key != "cells":
            continue
        position = skip(start + 1)
        index = 0
        while raw[position] != "]":
            cell_end = decoder.raw_decode(raw, position)[1]
            for cell_key, value_start, value_end in members(position):
                if cell_key == "source":
                    spans[index] = (value_start, value_end)
            index += 1
            position = skip(cell_end)
            if raw[position] == ",":
                position = skip(position + 1)
    return spans
