"""Hover, code lens, fxLsp/generatedCode and the traceWorkspace command, end to end."""

from __future__ import annotations

import asyncio
import pathlib
import time

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled

from lsp_support import FxClient, new_project, session, wait_for


def _line_of(path: pathlib.Path, needle: str) -> tuple[int, str]:
    for index, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        if needle in line:
            return index, line
    raise AssertionError(needle)


async def _hover(client, uri: str, line: int, character: int) -> str | None:
    result = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=line, character=character),
        )
    )
    return None if result is None else result.contents.value


@pytest.mark.asyncio(loop_scope="session")
async def test_hover(workspace: pathlib.Path, shared_client: FxClient) -> None:
    net = workspace / "pkg" / "net.py"
    client = shared_client
    uri = client.open(net)
    await client.diagnostics_for(uri, version=1)

    line, text = _line_of(net, "class Traceable")
    on_class = await _hover(client, uri, line, text.index("Traceable") + 2)
    assert "**Traceable** is FX-traceable: 4 nodes" in on_class
    assert "meta device" in on_class and " s." in on_class
    assert "```python\n" in on_class and "def forward(self, x)" in on_class
    assert "relu" in on_class
    line, _ = _line_of(net, "y = self.lin(x)")
    on_forward = await _hover(client, uri, line - 1, 8)
    assert on_forward == on_class

    # A line inside the traced forward: the graph nodes it produced.
    on_body = await _hover(client, uri, line, 10)
    assert "FX graph nodes from this line" in on_body
    assert "call_module" in on_body and "`lin`" in on_body

    line, text = _line_of(net, "class UsesLen")
    failed = await _hover(client, uri, line, text.index("UsesLen"))
    assert "**UsesLen** is not FX-traceable: 1 failure" in failed
    assert "`FX002` pkg/net.py:26" in failed or "`FX002` net.py:26" in failed

    line, text = _line_of(net, "return x * len(x)")
    on_failure = await _hover(client, uri, line, text.index("len(x)") + 1)
    assert on_failure.startswith("**FX002** (len): len() is called on a traced value")
    assert 'torch.fx.wrap("len")' in on_failure and "with .size(0)" in on_failure

    line, text = _line_of(net, "class NeedsArgs")
    guessed = await _hover(client, uri, line, text.index("NeedsArgs"))
    assert "**NeedsArgs** is FX-traceable" in guessed
    assert "Traced with guessed arguments: width=16." in guessed

    assert await _hover(client, uri, 0, 0) is None


@pytest.mark.asyncio(loop_scope="session")
async def test_code_lens_and_generated_code(
        workspace: pathlib.Path, shared_client: FxClient) -> None:
    net = workspace / "pkg" / "net.py"
    client = shared_client
    uri = client.open(net)
    await client.diagnostics_for(uri, version=1)
    lenses = await client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    by_class = {lens.command.arguments[1]: lens for lens in lenses
                if lens.command.command == "fxLsp.showGeneratedCode"}
    graph_lenses = {lens.command.arguments[1] for lens in lenses
                    if lens.command.command == "fxLsp.showGraph"}
    # A failed class's graph is the one recovered past its failures.
    assert {"Traceable", "UsesLen", "NeedsArgs"} <= graph_lenses
    assert by_class["Traceable"].command.title == "FX: traceable · 4 nodes"
    assert by_class["UsesLen"].command.title == "FX: 1 failure"
    assert by_class["NeedsArgs"].command.title == \
        "FX: traceable · 3 nodes · guessed arguments"
    traceable = by_class["Traceable"]
    assert traceable.command.command == "fxLsp.showGeneratedCode"
    assert list(traceable.command.arguments) == [uri, "Traceable"]
    assert traceable.range.start.line == _line_of(net, "class Traceable")[0]

    by_name = await client.protocol.send_request_async(
        "fxLsp/generatedCode", {"uri": uri, "className": "Traceable"}
    )
    line, _ = _line_of(net, "y = self.lin(x)")
    by_position = await client.protocol.send_request_async(
        "fxLsp/generatedCode",
        {"uri": uri, "position": {"line": line, "character": 4}},
    )
    for result in (by_name, by_position):
        assert result["uri"] == uri
        assert result["className"] == "Traceable"
        assert result["qualifiedName"] == "pkg.net:Traceable"
        assert result["status"] == "traceable"
        assert result["nodeCount"] == 4
        assert result["instantiatedOn"] == "meta"
        assert result["traceSeconds"] > 0
        assert "def forward(self, x)" in result["code"]
        (node,) = result["lineNodes"][str(line + 1)]
        assert node["op"] == "call_module" and node["target"] == "lin"
    missing = await client.protocol.send_request_async(
        "fxLsp/generatedCode", {"uri": uri, "className": "Nope"}
    )
    assert missing is None


@pytest.mark.slow
async def test_trace_workspace_with_progress(workspace: pathlib.Path) -> None:
    async with session(workspace) as client:
        await wait_for(lambda: client.statuses, 10, "a status")
        token = "trace-workspace-1"
        client.progress_reports[token] = []
        result = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(
                command="fxLsp.server.traceWorkspace", arguments=[], work_done_token=token
            )
        )
        assert result == {"files": 3, "modules": 8, "failed": 6}
        kinds = [type(report).__name__ for report in client.progress_reports[token]]
        assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd"
        reports = client.progress_reports[token][1:-1]
        assert reports and reports[-1].percentage == 100
        assert [r.percentage for r in reports] == sorted(r.percentage for r in reports)
        # Files that are not open get their diagnostics too.
        layers_uri = (workspace / "pkg" / "layers.py").as_uri()
        await wait_for(lambda: client.latest(layers_uri), 5, "layers.py diagnostics")


@pytest.mark.parametrize("how", ["progress", "request"])
async def test_trace_workspace_cancelled(tmp_path: pathlib.Path, how: str) -> None:
    """Cancelled through window/workDoneProgress/cancel or $/cancelRequest: the running
    workers are stopped, progress ends, and the server goes back to idle at once."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'many'\n")
    for index in range(6):
        (tmp_path / f"slow_{index}.py").write_text(
            "import time\n\nfrom torch import nn\n\n\nclass Slow(nn.Module):\n"
            "    def forward(self, x):\n        time.sleep(5)\n        return x\n"
        )
    async with session(tmp_path) as client:
        token = f"trace-workspace-{how}"
        client.progress_reports[token] = []
        command = asyncio.wrap_future(
            client.protocol.send_request(
                types.WORKSPACE_EXECUTE_COMMAND,
                types.ExecuteCommandParams(
                    command="fxLsp.server.traceWorkspace", arguments=[], work_done_token=token
                ),
                msg_id="trace-workspace-request",
            )
        )
        await wait_for(lambda: client.progress_reports[token], 10, "progress begin")
        await asyncio.sleep(1.0)
        cancelled_at = time.monotonic()
        if how == "progress":
            client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
            result = await asyncio.wait_for(command, 5)
            assert result["files"] == 6 and result["modules"] < 6
        else:
            client.protocol.notify(
                "$/cancelRequest", types.CancelParams(id="trace-workspace-request")
            )
            with pytest.raises(JsonRpcRequestCancelled):
                await asyncio.wait_for(command, 5)
        end = await wait_for(
            lambda: [r for r in client.progress_reports[token] if r.kind == "end"], 5, "end"
        )
        assert end[0].message.startswith("cancelled")
        await wait_for(
            lambda: client.statuses[-1]["state"] == "idle" and client.statuses[-1]["pending"] == 0,
            5,
            "idle after cancel",
        )
        assert time.monotonic() - cancelled_at < 4  # well before the 5 s sleeps would end


@pytest.mark.slow  # over 12 s in the loaded fast tier
@pytest.mark.usefixtures("unscaled_timeouts")
async def test_a_timed_out_class_shows_what_its_worker_printed(tmp_path: pathlib.Path) -> None:
    """The tail of a worker's output reaches the user: in the FX102 diagnostic, in the hover of
    the class (as a block that keeps its lines) and in the server's log."""
    workspace = new_project(tmp_path)
    slow = workspace / "slow.py"
    slow.write_text(
        "import time\n"
        "from torch import nn\n\n\n"
        "class WaitsForWeights(nn.Module):\n"
        "    def forward(self, x):\n"
        "        print('connecting to the weight server')\n"
        "        print('still waiting for shard 3')\n"
        "        time.sleep(60)\n"
        "        return x\n"
    )
    async with session(workspace, options={"fxLsp": {"timeout": 2}}) as client:
        uri = client.open(slow)
        diagnostics = await client.diagnostics_for(uri, version=1, timeout=90)
        (stopped,) = [d for d in diagnostics if d.code == "FX102"]
        assert stopped.message.endswith(
            "Last output of the worker:\n"
            "    connecting to the weight server\n    still waiting for shard 3"
        ), stopped.message
        hover = await _hover(client, uri, 4, 8)
        assert hover is not None
        assert "```text\n  connecting to the weight server\n  still waiting for shard 3\n  ```" in (
            hover
        ), hover
        logged = [m.message for m in client.log_messages if "timed out or crashed" in m.message]
        assert logged and logged[-1].endswith("still waiting for shard 3"), logged
