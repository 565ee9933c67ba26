"""A workspace trace after a cancelled one counts every file: the cancelled run's jobs leave
nothing behind (no cached or half result) that the next run would take for a verdict."""

from __future__ import annotations

import asyncio
import pathlib
import shutil

from lsprotocol import types

from lsp_support import session, wait_for

E2E_WORKSPACE = pathlib.Path(__file__).parents[3] / "vscode-client" / "e2e" / "workspace"


def trace_workspace(client, token: str) -> asyncio.Future:
    client.progress_reports[token] = []
    return asyncio.wrap_future(client.protocol.send_request(
        types.WORKSPACE_EXECUTE_COMMAND,
        types.ExecuteCommandParams(command="fxLsp.server.traceWorkspace", arguments=[],
                                   work_done_token=token)))


async def test_a_trace_after_a_cancelled_one_counts_every_file(tmp_path: pathlib.Path) -> None:
    workspace = tmp_path / "ws"
    shutil.copytree(E2E_WORKSPACE, workspace)
    async with session(workspace) as client:
        first = trace_workspace(client, "first")
        await wait_for(lambda: client.progress_reports["first"], 30, "progress begin")
        await asyncio.sleep(0.7)
        client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token="first"))
        await asyncio.wait_for(first, 10)
        result = await asyncio.wait_for(trace_workspace(client, "second"), 180)
        assert (result["files"], result["modules"]) == (5, 5), result
