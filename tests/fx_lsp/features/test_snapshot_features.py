"""The server's features as plain functions of a ``DocumentSnapshot``: hovers, quick fixes,
code lenses and inlay hints from a result made up here, over a real file, without a server
(tests/fx_lsp/server/ drive the same features end to end)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from lsprotocol import types

from fx_lsp.features import code_actions, code_lens, hover, inlay_hints, positions
from fx_lsp.features.diagnostics import Entry
from fx_lsp.features.initialization_options import Options
from fx_lsp.features.snapshot import DocumentSnapshot, Files
from fxcore.model.results import (
    ExampleInputs,
    Failure,
    FileResult,
    GraphNodeInfo,
    Hint,
    ModuleResult,
    Range,
    RecompileSubject,
)

SOURCE = """\
import torch
from torch import nn


class UsesLen(nn.Module):
    def forward(self, x):
        return x * len(x)
"""
#: ``len(x)`` on line 7 (1-based lines and columns, end exclusive).
LEN = Range(7, 20, 7, 26)
VERSION = 3
UTF16 = types.PositionEncodingKind.Utf16.value


def _module(path: Path, **fields: object) -> ModuleResult:
    values: dict[str, object] = {
        "path": str(path), "line": 5, "column": 7, "end_line": 5, "end_column": 14,
        "class_name": "UsesLen", "qualified_name": "model.UsesLen", "status": "failed",
    }
    return ModuleResult(**{**values, **fields})  # type: ignore[arg-type]


@pytest.fixture
def model(tmp_path: Path) -> Path:
    path = tmp_path / "model.py"
    path.write_text(SOURCE)
    return path


def _failure(path: Path) -> Failure:
    return Failure(str(path), LEN.line, LEN.column, LEN.end_line, LEN.end_column,
                   code="FX002", kind="len", message="len() of a traced tensor")


def _entry(path: Path, module: ModuleResult, failure: Failure) -> Entry:
    lines = positions.split_lines(SOURCE)
    diagnostic = types.Diagnostic(range=positions.range_to_lsp(lines, failure, UTF16),
                                  message=failure.message, code=failure.code, source="fx-lsp")
    return Entry(diagnostic, module, failure, str(path))


def _snapshot(path: Path, result: FileResult | None, *, entries: tuple[Entry, ...] = (),
              others: tuple[FileResult, ...] = (), open_version: int = VERSION,
              **fields: object) -> DocumentSnapshot:
    """``path`` open at ``VERSION``; ``open_version`` is what the server says it is now."""
    files = Files(
        text_of=lambda p: Path(p).read_text(),
        lines_of=lambda p: positions.split_lines(Path(p).read_text()),
        version_of=lambda p: open_version if p == str(path) else None,
        root_of=lambda p: str(path.parent),
    )
    snapshot = DocumentSnapshot(
        uri=path.as_uri(), path=str(path), version=VERSION, text=path.read_text(),
        encoding=UTF16, options=Options(), result=result, result_version=VERSION,
        current=True, entries=entries, others=others, traced_with=(), files=files)
    return dataclasses.replace(snapshot, **fields)  # type: ignore[arg-type]


def _failed(model: Path) -> tuple[FileResult, Entry]:
    failure = _failure(model)
    module = _module(model, failures=[failure])
    return FileResult(str(model), modules=[module]), _entry(model, module, failure)


def _markdown(found: types.Hover | None) -> str:
    assert found is not None
    assert isinstance(found.contents, types.MarkupContent)
    return found.contents.value


def test_hover_on_the_class_name_gives_its_verdict(model: Path) -> None:
    result, entry = _failed(model)
    snapshot = _snapshot(model, result, entries=(entry,))
    text = _markdown(hover.hover(snapshot, types.Position(line=4, character=9)))
    assert "UsesLen" in text and "not FX-traceable" in text and "FX002" in text


def test_hover_on_the_class_name_says_what_a_mode_could_not_do(model: Path) -> None:
    """A mode that lacks a torch hook says so in the hover (and the JSON's capture_notes)."""
    result, entry = _failed(model)
    noted = dataclasses.replace(
        result.modules[0], mode="export",
        capture_notes=["Only the first failure is found: this torch lacks a hook."])
    snapshot = _snapshot(model, FileResult(str(model), modules=[result.modules[0], noted]),
                         entries=(entry,))
    text = _markdown(hover.hover(snapshot, types.Position(line=4, character=9)))
    assert "Capture notes:\n- export: Only the first failure is found" in text


def test_hover_on_a_diagnostic_lists_its_quick_fixes(model: Path) -> None:
    result, entry = _failed(model)
    snapshot = _snapshot(model, result, entries=(entry,))
    on_len = types.Position(line=6, character=21)
    assert hover.lists_fixes(snapshot, on_len)
    found = hover.hover(snapshot, on_len)
    assert found is not None and found.range == entry.diagnostic.range
    text = _markdown(found)
    assert text.startswith("**FX002** (len):")
    assert "Quick fixes:" in text and "- Ignore FX002 on this line" in text


def test_hover_elsewhere_on_the_line_shows_other_results_nodes(model: Path) -> None:
    """The graph nodes a class of another open file made from this line."""
    result, entry = _failed(model)
    user = dataclasses.replace(
        _module(model, class_name="Parent", status="traceable"), path=str(model.parent / "p.py"),
        line_nodes={(str(model), 7): [GraphNodeInfo("len_1", "call_function", "len")]})
    snapshot = _snapshot(model, result, entries=(entry,),
                         others=(FileResult(user.path, modules=[user]),))
    on_return = types.Position(line=6, character=9)
    assert not hover.lists_fixes(snapshot, on_return)
    text = _markdown(hover.hover(snapshot, on_return))
    assert text.startswith("FX graph nodes from this line:")
    assert "| Parent | `len_1` | call_function | `len` |" in text


def test_code_actions_come_with_their_edits(model: Path) -> None:
    result, entry = _failed(model)
    snapshot = _snapshot(model, result, entries=(entry,))
    context = types.CodeActionContext(diagnostics=[entry.diagnostic])
    actions = code_actions.code_actions(snapshot, context, entry.diagnostic.range)
    ignore = next(a for a in actions if a.title == "Ignore FX002 on this line")
    assert ignore.data is None and ignore.edit is not None
    change = ignore.edit.document_changes[-1]  # type: ignore[index]
    assert isinstance(change, types.TextDocumentEdit)
    assert change.text_document.version == VERSION
    assert "ignore[FX002]" in change.edits[0].new_text


def test_resolved_code_actions_carry_the_uri_then_get_their_edit(model: Path) -> None:
    result, entry = _failed(model)
    snapshot = _snapshot(model, result, entries=(entry,))
    context = types.CodeActionContext(diagnostics=[])
    actions = code_actions.code_actions(snapshot, context, entry.diagnostic.range,
                                        resolves=True)
    assert actions and all(a.edit is None and a.data == {"uri": model.as_uri()}
                           for a in actions)
    ignore = next(a for a in actions if a.title == "Ignore FX002 on this line")
    resolved = code_actions.resolve(snapshot, ignore)
    assert resolved.edit is not None


def test_no_code_actions_for_a_text_changed_since_the_request(model: Path) -> None:
    result, entry = _failed(model)
    snapshot = _snapshot(model, result, entries=(entry,), open_version=VERSION + 1)
    context = types.CodeActionContext(diagnostics=[entry.diagnostic])
    assert snapshot.outdated()
    assert code_actions.code_actions(snapshot, context, entry.diagnostic.range) == []


def test_code_lenses_and_the_class_they_name(model: Path) -> None:
    result, _ = _failed(model)
    snapshot = _snapshot(model, result)
    lenses = code_lens.code_lenses(snapshot)
    assert [lens.range.start for lens in lenses] == [types.Position(line=4, character=6)]
    assert lenses[0].command is not None
    assert lenses[0].command.arguments == [model.as_uri(), "UsesLen"]
    in_forward = types.Position(line=6, character=0)
    assert code_lens.find_module(snapshot, None, in_forward) is result.modules[0]
    assert code_lens.find_module(snapshot, None, types.Position(line=0, character=0)) is None


def test_inlay_hints_follow_the_settings_and_the_text(model: Path) -> None:
    module = _module(model, status="traceable", inputs=ExampleInputs("config", {"x": "float32[2]"}),
                     line_nodes={(str(model), 7): [GraphNodeInfo("mul", "call_function", "mul",
                                                                  "float32[2]")]})
    snapshot = _snapshot(model, FileResult(str(model), modules=[module]))
    everything = types.Range(start=types.Position(line=0, character=0),
                             end=types.Position(line=7, character=0))
    hints = inlay_hints.inlay_hints(snapshot, everything)
    assert [(hint.position.line, hint.label) for hint in hints] == [(6, "[2]")]
    off = dataclasses.replace(snapshot, options=Options(shape_hints=False))
    assert inlay_hints.inlay_hints(off, everything) == []
    older = dataclasses.replace(snapshot, current=False)
    assert inlay_hints.inlay_hints(older, everything) == []


def test_a_recompile_whose_fix_would_change_outputs_gets_a_disabled_action_saying_why(
        tmp_path: Path) -> None:
    """A loop carrying a state between steps (FX508): no rewrite keeps its outputs, and the
    editor shows why, as a disabled quick fix, beside the "Ignore" one."""
    path = tmp_path / "cell.py"
    path.write_text("import torch\nfrom torch import nn\n\n\nclass Cell(nn.Module):\n"
                    "    def forward(self, steps):\n"
                    "        state = torch.zeros_like(steps[0])\n"
                    "        for step in steps:\n"
                    "            state = torch.tanh(step + state)\n"
                    "        return state\n")
    hint = Hint(str(path), 7, 9, 7, 43, code="FX508", kind="recompiles-every-length",
                message="torch.compile recompiles for every new length of `steps`: the "
                        "guard that fails: len(steps) == 3",
                recompile=RecompileSubject("length", "steps"))
    module = _module(path, class_name="Cell", qualified_name="cell.Cell", status="traceable")
    diagnostic = types.Diagnostic(range=positions.range_to_lsp(
        positions.split_lines(path.read_text()), hint, UTF16), message=hint.message,
        code=hint.code, source="fx-lsp")
    entry = Entry(diagnostic, module, hint, str(path))
    snapshot = _snapshot(path, FileResult(str(path), modules=[module]), entries=(entry,))
    context = types.CodeActionContext(diagnostics=[diagnostic])
    actions = code_actions.code_actions(snapshot, context, diagnostic.range,
                                        shows_disabled=True)
    (disabled,) = [action for action in actions if action.disabled is not None]
    assert disabled.title == "No quick fix for FX508" and disabled.edit is None
    assert disabled.disabled.reason.startswith("each step reads `state`, which the step before "
                                               "assigned")
    assert [action.title for action in actions if action.disabled is None] == [
        "Ignore FX508 on this line"]
    # A client without ``disabledSupport`` would offer it as a fix that does nothing.
    assert [action.title for action in code_actions.code_actions(
        snapshot, context, diagnostic.range)] == ["Ignore FX508 on this line"]
