"""The event loop stays free: closing the engine, quick fixes of big files and huge hovers do
not hold up other requests, and a workspace trace never publishes a stale text's result."""

from __future__ import annotations

import asyncio
import contextlib
import os
import pathlib
import signal
import textwrap
import threading
from collections.abc import Callable
from typing import Any

import pytest
from lsprotocol import types

from fx_lsp.server.language_server import FxLanguageServer
from fx_lsp.server.session import Session

from lsp_support import FxClient, new_project, session, wait_for

USES_LEN = textwrap.dedent(
    """\
    import torch
    from torch import nn


    class UsesLen(nn.Module):
        def forward(self, x):
            return x * len(x)
    """
)


def _hover_params(uri: str, line: int, character: int) -> types.HoverParams:
    return types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(line=line, character=character),
    )


async def test_trust_off_does_not_block_while_the_engine_closes(
    tmp_path: pathlib.Path,
) -> None:
    """A traced file leaves a background process holding the worker's output: closing the
    engine waits for it. The hover sent right after trust is turned off is answered before the
    background process reaches its next step (6 s later), that is without waiting for the close."""
    workspace = new_project(tmp_path)
    pid_file, marker = tmp_path / "child.pid", tmp_path / "six-seconds-later"
    spawner = workspace / "spawner.py"
    spawner.write_text(
        "import subprocess\n"
        f"subprocess.Popen(['sh', '-c', 'echo $$ > {pid_file}; sleep 6; "
        f"touch {marker}; exec sleep 1000'])\n" + USES_LEN
    )
    small = workspace / "small.py"
    small.write_text(USES_LEN)
    try:
        async with session(workspace, options={"fxLsp": {"timeout": 60}}) as client:
            small_uri = client.open(small)
            await client.diagnostics_for(small_uri, version=1, timeout=60)
            client.open(spawner)
            await wait_for(pid_file.exists, 60, "the background process")
            client.workspace_did_change_configuration(
                types.DidChangeConfigurationParams(settings={"fxLsp": {"trusted": False}})
            )
            await client.text_document_hover_async(_hover_params(small_uri, 6, 20))
            assert not marker.exists(), "the hover waited for the engine to close"
            await wait_for(
                lambda: client.statuses[-1]["state"] == "disabled", 10, "disabled status"
            )
    finally:
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pid_file.read_text()), signal.SIGKILL)


async def test_workspace_trace_of_an_older_text_is_not_published(tmp_path: pathlib.Path) -> None:
    """A buffer edited (lines inserted above the failure) while a workspace trace of its older
    text runs: that trace's diagnostics must not be published under the new version."""
    workspace = new_project(tmp_path)
    slow = workspace / "slow.py"
    text = "import time\ntime.sleep(3)\n" + USES_LEN
    slow.write_text(text)
    failure_line = text.splitlines().index("        return x * len(x)")
    async with session(workspace) as client:
        uri = client.open(slow)
        command = asyncio.ensure_future(
            client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="fxLsp.server.traceWorkspace", arguments=[])
            )
        )
        await wait_for(
            lambda: client.statuses and client.statuses[-1]["pending"] >= 2,
            30,
            "the document's and the workspace's traces",
        )
        version = client.replace_text(uri, "\n" * 5 + text)
        await asyncio.wait_for(command, 60)
        diagnostics = await client.diagnostics_for(uri, version=version, timeout=60)
        published = [p for p in client.published if p.uri == uri and p.version == version]
        lines = {d.range.start.line for p in published for d in p.diagnostics if d.code == "FX002"}
        assert lines == {failure_line + 5}, (lines, failure_line + 5)
        assert diagnostics


class _SlowEngine:
    """An engine session whose close takes until the test releases it."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.closed = False

    def close(self) -> None:
        self.release.wait(30)
        self.closed = True


def test_trust_off_returns_before_the_engine_has_closed() -> None:
    """The end-to-end test above no longer needs a slow close (workers' process trees are
    killed, so no pipe holds it); this one makes the close slow: turning trust off, on the
    event loop, must not wait for it."""
    state = Session(FxLanguageServer())
    engine = _SlowEngine()
    state.engine.session = engine  # type: ignore[assignment]
    try:
        state.set_trusted(False)
        assert state.engine.session is None
        assert not engine.closed, "set_trusted(False) waited for the engine to close"
    finally:
        engine.release.set()


def _node_rows(value: str) -> list[str]:
    return [row for row in value.splitlines() if row.startswith("| ") and "`" in row]


async def test_hover_of_a_line_with_thousands_of_nodes_is_truncated(
    tmp_path: pathlib.Path,
) -> None:
    workspace = new_project(tmp_path)
    wide = workspace / "wide.py"
    wide.write_text(
        "from torch import nn\n\n\n"
        "class Wide(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return sum([x * i for i in range(3000)])\n"
    )
    async with session(workspace) as client:
        uri = client.open(wide)
        await client.diagnostics_for(uri, version=1, timeout=60)
        await wait_for(lambda: client.traced, 30, "the trace")
        result = await client.text_document_hover_async(_hover_params(uri, 5, 20))
        assert result is not None
        value = result.contents.value
        rows = _node_rows(value)
        assert 0 < len(rows) <= 50, len(rows)
        assert "more nodes" in value
        assert len(value) < 20_000


def _big_file(text: str, filler_functions: int) -> str:
    return text + "".join(
        f"\n\ndef filler_{i}(x):\n    return x + {i}\n" for i in range(filler_functions)
    )


async def _len_diagnostic(client: FxClient, uri: str) -> types.Diagnostic:
    diagnostics = await client.diagnostics_for(uri, version=1, timeout=90)
    (found,) = [d for d in diagnostics if d.code == "FX002"]
    return found


def _code_action_params(uri: str, diagnostic: types.Diagnostic) -> types.CodeActionParams:
    return types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=diagnostic.range,
        context=types.CodeActionContext(diagnostics=[diagnostic]),
    )


@pytest.mark.slow  # over 15 s
async def test_hover_is_answered_while_a_big_file_computes_its_fixes(
    tmp_path: pathlib.Path,
) -> None:
    """Quick fixes of a 20,000-line file parse it with libcst (seconds): a hover on another
    file sent after that request is answered first."""
    workspace = new_project(tmp_path)
    big, small = workspace / "big.py", workspace / "small.py"
    big.write_text(_big_file(USES_LEN, 5000))
    small.write_text(USES_LEN)
    async with session(workspace) as client:
        big_uri, small_uri = client.open(big), client.open(small)
        target = await _len_diagnostic(client, big_uri)
        await client.diagnostics_for(small_uri, version=1, timeout=60)
        order: list[str] = []

        async def code_actions() -> None:
            actions = await client.text_document_code_action_async(
                _code_action_params(big_uri, target)
            )
            assert any(a.title.startswith("Wrap len") for a in actions)
            order.append("code actions")

        async def hover() -> None:
            await asyncio.sleep(0.2)  # the code-action request is on its way first
            await client.text_document_hover_async(_hover_params(small_uri, 6, 20))
            order.append("hover")

        await asyncio.gather(code_actions(), hover())
        assert order == ["hover", "code actions"]


async def test_code_actions_resolve_their_edits_lazily(workspace: pathlib.Path) -> None:
    """A client that resolves code actions (VS Code) gets the list without edits, and the edit
    on codeAction/resolve."""
    net = workspace / "pkg" / "net.py"
    line = net.read_text().splitlines().index("        return x * len(x)")
    async with session(workspace, resolve_code_actions=True) as client:
        uri = client.open(net)
        diagnostics = await client.diagnostics_for(uri, version=1)
        (target,) = [d for d in diagnostics if d.range.start.line == line and d.severity == 1]
        actions = await client.text_document_code_action_async(_code_action_params(uri, target))
        (wrap,) = [a for a in actions if a.title.startswith("Wrap len")]
        assert all(a.edit is None for a in actions)
        resolved = await client.code_action_resolve_async(wrap)
        (edit,) = resolved.edit.document_changes
        assert edit.text_document.uri == uri
        assert any('torch.fx.wrap("len")' in e.new_text for e in edit.edits)


class _EditWhenTraced(list[dict[str, Any]]):
    """``FxClient.traced`` that makes an edit as soon as the client reads that ``uri`` was
    traced, before it reads anything the server sent after that notification."""

    def __init__(self, traced: list[dict[str, Any]], uri: str, edit: Callable[[], None]) -> None:
        super().__init__(traced)
        self._uri = uri
        self._edit: Callable[[], None] | None = edit

    def append(self, traced: dict[str, Any]) -> None:
        super().append(traced)
        if traced["uri"] == self._uri and self._edit is not None:
            edit, self._edit = self._edit, None
            edit()


async def test_an_older_result_is_not_republished_over_an_edited_buffer(
    tmp_path: pathlib.Path,
) -> None:
    """A file that imports an edited, unsaved buffer is traced again (run on save: the buffer
    itself is not): when that trace ends, the buffer's older result must not be republished on
    its new text. Its lines moved; the client already moved the shown diagnostics with the
    edit.

    The buffer is edited the moment the client reads that the importing file's first trace
    ended: that trace's publication on the buffer (the failure it locates there), sent after
    the notification and before the server reads the edit, is still on its way (as on a
    loaded machine, where CI once counted it as published after the edit)."""
    workspace = new_project(tmp_path)
    layers, model = workspace / "layers.py", workspace / "model.py"
    layers.write_text(USES_LEN)
    model.write_text(
        "from torch import nn\n\nfrom layers import UsesLen\n\n\n"
        "class Net(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.block = UsesLen()\n\n"
        "    def forward(self, x):\n"
        "        return self.block(x)\n"
    )
    async with session(workspace) as client:
        layers_uri = client.open(layers)
        assert await client.diagnostics_for(layers_uri, version=1, timeout=60)
        await wait_for(lambda: client.traced, 30, "the trace of layers.py")
        model_uri = client.open(model)
        at_edit: list[int] = []

        def edit() -> None:
            client.replace_text(layers_uri, "\n" * 5 + USES_LEN)
            at_edit.append(len(client.published))

        client.traced = _EditWhenTraced(client.traced, model_uri, edit)
        await wait_for(lambda: at_edit, 60, "the edit")
        # The answer to a request sent after the edit comes after all the server sent before
        # it read the edit; that was the older text's, and says so.
        await client.text_document_hover_async(_hover_params(layers_uri, 0, 0))
        in_flight = [p.version for p in client.published[at_edit[0]:] if p.uri == layers_uri]
        assert in_flight == [1], f"not the publication on its way at the edit: {in_flight}"
        edited, traced = len(client.published), len(client.traced)
        client.save(model_uri)
        await wait_for(
            lambda: any(t["uri"] == model_uri for t in client.traced[traced:]), 60, "model traced"
        )
        # A request after the trace's publications: its answer comes after all of them.
        await client.text_document_hover_async(_hover_params(layers_uri, 0, 0))
        republished = [p for p in client.published[edited:] if p.uri == layers_uri]
        assert republished == [], [
            (p.version, [d.range.start.line for d in p.diagnostics]) for p in republished
        ]
