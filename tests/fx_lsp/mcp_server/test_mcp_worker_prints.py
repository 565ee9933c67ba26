"""What the workers print reaches ``fx-lsp mcp``'s stderr, as docs/agents.md says: stdout is
the protocol's, and the server's log (stderr) shows each file's printed lines as
``fx-lsp check -v`` does. Before, the server logged them at a level it did not show, so a
worker's prints reached no stream."""

from __future__ import annotations

import pathlib
import tempfile

import pytest

pytest.importorskip("mcp", reason="the mcp extra (pip install 'fx-lsp[mcp]')")
from mcp_sessions import mcp_session

PRINTS = """\
from torch import nn

print("imported: hello from the model file")


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)
"""


@pytest.mark.slow
async def test_what_a_worker_prints_reaches_the_server_s_stderr(tmp_path: pathlib.Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "pyproject.toml").write_text("[project]\nname = 'w'\n")
    (workspace / "prints.py").write_text(PRINTS)
    with tempfile.TemporaryFile("w+") as errors:
        async with mcp_session(workspace, errors) as session:
            checked = await session.call_tool("check", {"paths": ["prints.py"], "modes": ["fx"]})
            assert not checked.is_error, checked.content
        errors.seek(0)
        logged = errors.read()
    assert "prints.py printed:" in logged, logged[-3000:]
    assert "hello from the model file" in logged, logged[-3000:]
