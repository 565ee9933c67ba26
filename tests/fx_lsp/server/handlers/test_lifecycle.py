"""Trust, the client's process, shutdown: no user code when untrusted, no orphans ever."""

from __future__ import annotations

import asyncio
import importlib.metadata
import os
import pathlib
import subprocess
import sys
import time

import pytest
from lsprotocol import types
from process_tree import children_of
from pygls.uris import from_fs_path

from lsp_support import make_client, session, wait_for


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return pathlib.Path(f"/proc/{pid}").exists() and "Z" not in _state(pid)


def _state(pid: int) -> str:
    try:
        return pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "Z"


@pytest.mark.slow  # over 12 s in the loaded fast tier
async def test_untrusted_runs_no_user_code_until_trusted(workspace: pathlib.Path) -> None:
    marker = workspace / "imported.txt"
    net = workspace / "pkg" / "net.py"
    net.write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n" + net.read_text()
    )
    async with session(workspace, options={"fxLsp": {"trusted": False}}) as client:
        uri = client.open(net)
        await wait_for(lambda: client.statuses, 10, "a status")
        await asyncio.sleep(3)
        assert client.statuses[-1]["state"] == "disabled"
        infos = [m for m in client.messages if m.type == types.MessageType.Info]
        assert len(infos) == 1 and "trusted" in infos[0].message
        assert not [p for p in client.published if p.uri == uri and p.diagnostics]
        assert not marker.exists()
        assert children_of(client._server.pid) == []  # not even the torch worker

        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"fxLsp": {"trusted": True}})
        )
        diagnostics = await client.diagnostics_for(uri, version=1)
        assert any(d.code == "FX002" for d in diagnostics)
        assert marker.exists()


@pytest.mark.slow
async def test_shutdown_and_exit_leave_no_processes(workspace: pathlib.Path) -> None:
    client = make_client()
    await client.start_io(sys.executable, "-m", "fx_lsp", "serve", "--stdio")
    initialized = await client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=from_fs_path(str(workspace))
        )
    )
    assert initialized.server_info == types.ServerInfo(
        name="fx-lsp", version=importlib.metadata.version("fx-lsp")
    )
    uri = client.open(workspace / "pkg" / "net.py")
    diagnostics = await client.diagnostics_for(uri, version=1)
    server_pid = client._server.pid
    engine_processes = children_of(server_pid)
    assert engine_processes, "the engine's worker process should be running"
    # A quick fix starts the process that parses for quick fixes.
    failure = next(d for d in diagnostics if d.code == "FX002")
    actions = await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=failure.range,
            context=types.CodeActionContext(diagnostics=[failure]),
        )
    )
    assert any(a.title.startswith("Wrap len") and a.edit is not None for a in actions)
    helpers = children_of(server_pid)
    assert set(helpers) - set(engine_processes), "the parse process should be running"
    await client.shutdown_session()
    assert client._server.returncode == 0
    await wait_for(lambda: not any(_alive(pid) for pid in helpers), 10, "workers gone")
    await client.stop()


@pytest.mark.slow  # over 12 s in the loaded fast tier
async def test_exits_when_the_client_process_dies(workspace: pathlib.Path) -> None:
    editor = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        async with session(workspace, process_id=editor.pid) as client:
            uri = client.open(workspace / "pkg" / "net.py")
            await client.diagnostics_for(uri, version=1)
            server = client._server
            helpers = children_of(server.pid)
            assert helpers
            editor.kill()
            editor.wait()
            await asyncio.wait_for(server.wait(), 10)
            await wait_for(lambda: not any(_alive(pid) for pid in helpers), 10, "workers gone")
    finally:
        editor.kill()


@pytest.mark.slow
async def test_serves_over_tcp(workspace: pathlib.Path) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "fx_lsp", "serve", "--tcp", f"127.0.0.1:{port}"], cwd=workspace
    )
    try:
        client = make_client()

        async def connect() -> bool:
            try:
                await client.start_tcp("127.0.0.1", port)
            except OSError:
                return False
            return True

        # Until the server listens: its start (imports) takes seconds, many more on a busy
        # machine, so the bound is one load cannot reach; a client that never connected would
        # wait for its answers forever.
        deadline = time.monotonic() + 300
        while not await connect():
            assert server.poll() is None, f"the server exited with {server.returncode}"
            assert time.monotonic() < deadline, "the server never listened on its port"
            await asyncio.sleep(0.1)
        await client.initialize_session(
            types.InitializeParams(
                capabilities=types.ClientCapabilities(), root_uri=from_fs_path(str(workspace))
            )
        )
        uri = client.open(workspace / "pkg" / "net.py")
        assert any(d.code == "FX002" for d in await client.diagnostics_for(uri, version=1))
        await client.shutdown_async(None)
        client.exit(None)
        await client.stop()
        assert await asyncio.to_thread(server.wait, 15) == 0
    finally:
        server.kill()


@pytest.mark.slow
async def test_background_processes_of_user_code_do_not_outlive_shutdown(
        workspace: pathlib.Path) -> None:
    """A file that starts a detached process (its own session) while importing: the trace
    ends normally and nothing it started survives the server's shutdown."""
    pids = workspace / "started.txt"
    net = workspace / "pkg" / "net.py"
    net.write_text(
        "import pathlib, subprocess\n"
        "_daemon = subprocess.Popen(['sleep', '1000'], start_new_session=True)\n"
        f"pathlib.Path({str(pids)!r}).write_text(str(_daemon.pid))\n" + net.read_text()
    )
    client = make_client()
    await client.start_io(sys.executable, "-m", "fx_lsp", "serve", "--stdio")
    await client.initialize_session(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=from_fs_path(str(workspace))
        )
    )
    uri = client.open(net)
    diagnostics = await client.diagnostics_for(uri, version=1)
    assert not [d for d in diagnostics if d.code == "FX102"]  # no false time-out
    daemon = int(pids.read_text())
    try:
        await client.shutdown_session()
        await wait_for(lambda: not _alive(daemon), 10, "the detached process gone")
    finally:
        if _alive(daemon):
            os.kill(daemon, 9)
        await client.stop()
