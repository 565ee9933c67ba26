"""The server's result cache does not serve a result for a dependency's old text: a real
server process, real files, a helper edited while its import runs."""

from __future__ import annotations

import pathlib

import pytest
from lsprotocol import types
from pygls.uris import from_fs_path

from lsp_support import new_project, session, wait_for


@pytest.mark.slow
async def test_a_helper_edited_during_its_import_is_retraced_after_the_file_event(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The import reads helper.py, helper.py gains a len(x), the trace ends, then the editor
    reports the change: the re-trace must show the FX002, not the cached old verdict."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    workspace = new_project(tmp_path)
    importing, go = tmp_path / "importing", tmp_path / "go"
    helper_head = (f"import pathlib, time\npathlib.Path({str(importing)!r}).touch()\n"
                   f"for _ in range(600):\n    if pathlib.Path({str(go)!r}).exists():\n"
                   "        break\n    time.sleep(0.1)\n\n\n")
    helper = workspace / "helper.py"
    helper.write_text(helper_head + "def act(x):\n    return x.relu()\n")
    model = workspace / "model.py"
    model.write_text("from torch import nn\n\nfrom helper import act\n\n\nclass Net(nn.Module):\n"
                     "    def forward(self, x):\n        return act(x)\n")
    async with session(workspace) as client:
        uri = client.open(model)
        # Sequencing, not timing: the import has read helper.py once it touches the marker.
        await wait_for(importing.exists, timeout=120, what="the import of helper.py")
        helper.write_text(helper_head + "def act(x):\n    return x.relu() * len(x)\n")
        go.touch()
        await wait_for(lambda: client.traced, timeout=120, what="the first trace")
        assert list(client.latest(uri).diagnostics) == []  # the verdict of the imported text
        mark, traces = len(client.published), len(client.traced)
        client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
            types.FileEvent(uri=from_fs_path(str(helper)), type=types.FileChangeType.Changed)]))
        await wait_for(lambda: len(client.traced) > traces, timeout=120, what="the re-trace")
        after = await client.diagnostics_for(uri, version=1, after=mark)
        assert [diagnostic.code for diagnostic in after] == ["FX002"]
