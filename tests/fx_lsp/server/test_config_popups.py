"""Configuration problems over a real server: one pop-up per read of a ``pyproject.toml`` however
many problems it has (each problem goes to the log), and a file nested too deeply to parse or a
``call`` too deep to read is a problem, not a file whose diagnostics stop: the server keeps
publishing and answering."""

from __future__ import annotations

import pathlib

import pytest
from editor_edits import code_actions_for
from lsprotocol import types

from lsp_support import session, wait_for

MODEL = ("from torch import nn\n\n\nclass Net(nn.Module):\n    def forward(self, x):\n"
         "        return x + len(x)\n")
UNKNOWN_KEYS = 2000
#: Tracing starts a worker with torch on a shared machine: minutes, not seconds, at worst.
PUBLISH_SECONDS = 180.0


def _project(folder: pathlib.Path, pyproject: str) -> pathlib.Path:
    folder.mkdir()
    (folder / "pyproject.toml").write_text(pyproject)
    (folder / "model.py").write_text(MODEL)
    return folder / "model.py"


def _warnings(messages: list[types.ShowMessageParams]) -> list[str]:
    return [m.message for m in messages if m.type == types.MessageType.Warning]


@pytest.mark.slow
async def test_2000_unknown_keys_give_one_popup_and_each_is_logged(
        tmp_path: pathlib.Path) -> None:
    keys = "".join(f"unknown-{index} = {index}\n" for index in range(UNKNOWN_KEYS))
    # An editor key's problem and the engine's come from the same read: still one pop-up.
    model = _project(tmp_path / "w", f'[tool.fx-lsp]\ndebounce-ms = "soon"\n{keys}')
    async with session(model.parent) as client:
        uri = client.open(model)
        diagnostics = await client.diagnostics_for(uri, version=1, timeout=PUBLISH_SECONDS)
        assert any(d.code == "FX002" for d in diagnostics)
        (popup,) = _warnings(client.messages)
        assert popup.startswith(f"fx-lsp: {UNKNOWN_KEYS + 1:,} problems in ")
        assert "pyproject.toml" in popup and "log" in popup
        logged = "\n".join(m.message for m in client.log_messages)
        assert all(f"unknown option 'unknown-{index}'" in logged
                   for index in range(UNKNOWN_KEYS))
        assert "invalid debounce-ms = 'soon'" in logged

        # Read again after a change: only the new problem, as itself.
        (model.parent / "pyproject.toml").write_text(
            f'[tool.fx-lsp]\ndebounce-ms = "soon"\nanother = 1\n{keys}')
        client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
            types.FileEvent(uri=uri.replace("model.py", "pyproject.toml"),
                            type=types.FileChangeType.Changed)]))
        await wait_for(lambda: len(_warnings(client.messages)) > 1, PUBLISH_SECONDS,
                       "the pop-up for the new key")
        assert _warnings(client.messages)[1].endswith("unknown option 'another'")
        assert len(_warnings(client.messages)) == 2


@pytest.mark.slow  # over 12 s in the loaded fast tier
async def test_a_pyproject_too_deep_to_parse_leaves_tracing_and_requests_working(
        tmp_path: pathlib.Path) -> None:
    depth = 5000
    deep = _project(tmp_path / "deep",
                    "[tool.fx-lsp]\nexclude = " + "[" * depth + "]" * depth + "\n")
    terms = "+".join(["1"] * 100_000)
    # The rest of this file applies: its severity makes the FX002 a hint.
    call = _project(tmp_path / "call", '[tool.fx-lsp]\nseverity = "hint"\n\n'
                    f'[tool.fx-lsp.modules."model:Net"]\ncall = "Net({terms})"\n')
    plain = _project(tmp_path / "plain", "[project]\nname = 'plain'\n")
    async with session(deep.parent, folders=[deep.parent, call.parent, plain.parent]) as client:
        uris = {name: client.open(path) for name, path in
                (("deep", deep), ("call", call), ("plain", plain))}
        for name, uri in uris.items():
            diagnostics = await client.diagnostics_for(uri, version=1, timeout=PUBLISH_SECONDS)
            (fx002,) = [d for d in diagnostics if d.code == "FX002"]
            assert fx002.severity == (types.DiagnosticSeverity.Hint if name == "call"
                                      else types.DiagnosticSeverity.Error), name
            assert await code_actions_for(client, uri, fx002), name
        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uris["deep"]),
            position=types.Position(line=5, character=20)))
        assert hover is not None and "len" in hover.contents.value
        warnings = _warnings(client.messages)
        assert len(warnings) == 2, warnings
        assert any("deep" in w and "nested too deeply to parse" in w for w in warnings)
        (too_deep,) = [w for w in warnings if "'call' is nested too deeply" in w]
        assert len(too_deep) < 500, too_deep
