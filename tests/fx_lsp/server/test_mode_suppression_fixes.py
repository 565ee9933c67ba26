"""The "Ignore CODE on this line" quick fix for the codes of the export and compile modes
(FX401, GB0170), through a real server with ``fxLsp.modes`` = fx, export, compile: it is
offered on the mode's diagnostic, applying it edits the line, and the re-trace no longer
reports that code there while the other modes' diagnostics stay."""

from __future__ import annotations

import pathlib

import pytest
from editor_edits import apply_workspace_edit, code_actions_for

from lsp_support import session

MODEL = """import torch
from torch import nn


class Branchy(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            return x + 1
        return x - 1
"""
CONFIG = '[tool.fx-lsp.modules."net:Branchy"]\ninputs = {x = "float32[2, 8]"}\n'
MODES = ["fx", "export", "compile"]


@pytest.mark.slow  # over 12 s in the loaded fast tier
@pytest.mark.parametrize("code", ["FX401", "GB0170"])
async def test_ignore_quick_fix_for_a_mode_code(tmp_path: pathlib.Path, code: str) -> None:
    (tmp_path / "pyproject.toml").write_text(CONFIG)
    net = tmp_path / "net.py"
    net.write_text(MODEL)
    async with session(tmp_path, options={"modes": MODES}) as client:
        uri = client.open(net)
        before = await client.settled_diagnostics(uri, version=1)
        assert {"FX001", "FX401", "GB0170"} <= {str(d.code) for d in before}
        (target,) = [d for d in before if str(d.code) == code]
        (action,) = [a for a in await code_actions_for(client, uri, target)
                     if a.title == f"Ignore {code} on this line"]
        mark = len(client.published)
        await apply_workspace_edit(client, action.edit)
        after = await client.settled_diagnostics(uri, after=mark)
        line = net.read_text().splitlines()[target.range.start.line]
        assert code in line.split("#", 1)[1]
        assert code not in {str(d.code) for d in after}
        assert {"FX001", "FX401", "GB0170"} - {code} <= {str(d.code) for d in after}
