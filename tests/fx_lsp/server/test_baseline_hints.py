"""The baseline of ``fx-lsp check --write-baseline`` in the editor, through the real server:
what it holds shows as hints, saying so; a new problem keeps its severity."""

from __future__ import annotations

import pathlib

import pytest
from lsprotocol import types

from fx_lsp.features.baseline_hints import BASELINED

from cli_support import fx_lsp
from lsp_support import FxClient, new_project

MODEL = """from torch import nn


class Net(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            x = x + 1
        return x * len(x)
"""
NEW = """

class Rows(nn.Module):
    def forward(self, x):
        return x.view(len(x), -1)
"""
#: Net's lines once Rows is put above it.
MOVED = 5


@pytest.mark.asyncio(loop_scope="session")
async def test_baselined_problems_show_as_hints(tmp_path: pathlib.Path,
                                                shared_client: FxClient) -> None:
    workspace = new_project(tmp_path)
    path = workspace / "net.py"
    path.write_text(MODEL)
    written = fx_lsp("check", "--no-cache", "--write-baseline", ".", cwd=workspace)
    assert "Wrote 2 problems to the baseline" in written.stderr, written.stderr
    # Above Net (whose lines move down) and below it, right after its last line.
    path.write_text(MODEL.replace("from torch import nn\n", "from torch import nn\n" + NEW)
                    + NEW.replace("Rows", "MoreRows"))
    found = await shared_client.diagnostics_for(shared_client.open(path))
    shown = {(d.range.start.line, str(d.code)): d for d in found}
    assert set(shown) == {(5, "FX002"), (5 + MOVED, "FX001"), (7 + MOVED, "FX002"),
                          (12 + MOVED, "FX002")}
    for old in ((5 + MOVED, "FX001"), (7 + MOVED, "FX002")):
        assert shown[old].severity == types.DiagnosticSeverity.Hint
        assert BASELINED in shown[old].message
    for new in ((5, "FX002"), (12 + MOVED, "FX002")):
        assert shown[new].severity == types.DiagnosticSeverity.Error
        assert BASELINED not in shown[new].message
