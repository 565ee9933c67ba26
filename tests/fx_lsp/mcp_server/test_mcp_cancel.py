"""Cancelling an MCP ``check`` stops its trace: a real client over stdio cancels a call whose
worker is busy (the SDK sends ``notifications/cancelled``); the worker is killed and the next
call is answered at once, not after the cancelled trace would have ended."""

from __future__ import annotations

import pathlib
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest

mcp = pytest.importorskip("mcp", reason="the mcp extra (pip install 'fx-lsp[mcp]')")
import anyio  # noqa: E402  (the mcp extra's)
from mcp import ClientSession  # noqa: E402
from mcp_sessions import mcp_session  # noqa: E402

#: A file whose import, in the worker judging it, says the worker's pid and then stays busy far
#: longer than the test waits: only a stopped trace lets the next call through.
BUSY = """\
import os
import pathlib
import time

from torch import nn

pathlib.Path(__file__).with_name("busy-worker").write_text(str(os.getpid()))
time.sleep(600)


class Busy(nn.Module):
    def forward(self, x):
        return x
"""
FINE = """\
from torch import nn


class Fine(nn.Module):
    def forward(self, x):
        return x.relu()
"""


@asynccontextmanager
async def _client(workspace: pathlib.Path) -> AsyncIterator[ClientSession]:
    with tempfile.TemporaryFile("w+") as errors:
        async with mcp_session(workspace, errors) as session:
            yield session


def _running(pid: int) -> bool:
    """Whether the process runs (a killed one not yet reaped is a zombie: not running)."""
    try:
        status = pathlib.Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


@pytest.mark.slow
async def test_cancelling_a_check_stops_its_trace(tmp_path: pathlib.Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "pyproject.toml").write_text("[project]\nname = 'w'\n\n[tool.fx-lsp]\n"
                                              "timeout = 900\n")
    (workspace / "busy.py").write_text(BUSY)
    (workspace / "fine.py").write_text(FINE)
    marker = workspace / "busy-worker"
    async with _client(workspace) as session:
        async with anyio.create_task_group() as group:
            group.start_soon(session.call_tool, "check", {"paths": ["busy.py"]})
            with anyio.fail_after(180):  # the zygote's start, then the worker's
                while not marker.exists() or not marker.read_text():
                    await anyio.sleep(0.2)
            group.cancel_scope.cancel()
        worker = int(marker.read_text())
        with anyio.fail_after(60):
            while _running(worker):
                await anyio.sleep(0.2)
        with anyio.fail_after(120):
            checked = await session.call_tool("check", {"paths": ["fine.py"]})
    assert not checked.is_error, checked.content
    report = checked.structured_content
    assert report is not None
    assert [(module["qualified_name"], module["status"]) for module in report["modules"]] \
        == [("fine:Fine", "traceable")], report["modules"]
