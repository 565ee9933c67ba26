"""Untrusted workspaces stay untrusted: no workspace code in the server, trust that fails
closed, no writes outside the opened folder, a TCP port for this machine only."""

from __future__ import annotations

import asyncio
import contextlib
import os
import pathlib
import shutil
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

from lsprotocol import types
from process_tree import children_of
from pygls.uris import from_fs_path

from lsp_support import (
    FxClient,
    capabilities,
    make_client,
    new_project,
    session,
    wait_for,
)

#: Modules the server imports after ``python -m fx_lsp`` starts running, and the package itself.
SHADOWS = ["tomlkit.py", "json.py", "pygls/__init__.py", "fx_lsp/__init__.py"]


def _plant_shadows(workspace: pathlib.Path, markers: pathlib.Path) -> None:
    """Workspace files named like modules the server imports; each writes a marker if run."""
    for name in SHADOWS:
        target = workspace / name
        target.parent.mkdir(parents=True, exist_ok=True)
        marker = markers / name.replace("/", "_")
        target.write_text(
            f"open({str(marker)!r}, 'w').write('ran')\nraise ImportError('shadow')\n"
        )


@contextlib.asynccontextmanager
async def _server(
    workspace: pathlib.Path, cwd: pathlib.Path, env: dict[str, str], options: dict[str, Any]
) -> AsyncIterator[FxClient]:
    client = make_client()
    await client.start_io(
        sys.executable, "-m", "fx_lsp", "serve", "--stdio", cwd=str(cwd), env=env
    )
    try:
        await client.initialize_session(
            types.InitializeParams(
                capabilities=capabilities(),
                root_uri=from_fs_path(str(workspace)),
                workspace_folders=[
                    types.WorkspaceFolder(uri=from_fs_path(str(workspace)), name="w")
                ],
                initialization_options=options,
            )
        )
        yield client
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(client.shutdown_session(), 20)
        await client.stop()


async def _exercise(client: FxClient, workspace: pathlib.Path) -> None:
    """Open a file, hover it, ask for code actions and for a class's graph: every path that
    could import."""
    uri = client.open(workspace / "pkg" / "net.py")
    await wait_for(lambda: client.statuses, 20, "a status")
    await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=12, character=8),
        )
    )
    await client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(start=types.Position(line=0, character=0),
                              end=types.Position(line=60, character=0)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    # The graph view draws only what the server sends; untrusted, there is nothing to send.
    graph = await client.protocol.send_request_async(
        "fxLsp/graph", {"uri": uri, "className": "Traceable"})
    assert graph is None


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", "")}


async def test_started_as_the_extension_does_no_workspace_module_runs(
    workspace: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """The VS Code extension's start (vscode-client/src/server.ts safeProcessOptions): a
    neutral working folder and PYTHONSAFEPATH=1. Even ``fx_lsp/`` in the workspace is inert."""
    markers, neutral = tmp_path / "markers", tmp_path / "neutral"
    markers.mkdir()
    neutral.mkdir()
    _plant_shadows(workspace, markers)
    env = {**_env(), "PYTHONSAFEPATH": "1"}
    async with _server(workspace, neutral, env, {"fxLsp": {"trusted": False}}) as client:
        await _exercise(client, workspace)
        assert client.statuses[-1]["state"] == "disabled"
    assert sorted(os.listdir(markers)) == []


async def test_started_in_the_workspace_later_imports_skip_it(
    workspace: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """An editor that still starts ``python -m fx_lsp serve`` in the workspace: the modules the
    server imports once running (json, pygls, tomlkit...) do not come from the workspace."""
    markers = tmp_path / "markers"
    markers.mkdir()
    _plant_shadows(workspace, markers)
    shutil.rmtree(workspace / "fx_lsp")  # out of reach of any server-side guard
    async with _server(workspace, workspace, _env(), {"fxLsp": {"trusted": False}}) as client:
        await _exercise(client, workspace)
    assert sorted(os.listdir(markers)) == []


def _trust_messages(client: FxClient) -> list[str]:
    return [m.message for m in client.messages if "trusted" in m.message]


async def test_trust_survives_settings_that_omit_it_and_fails_closed(
    workspace: pathlib.Path,
) -> None:
    marker = workspace / "imported.txt"
    net = workspace / "pkg" / "net.py"
    net.write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n" + net.read_text()
    )
    async with session(workspace, options={"fxLsp": {"trusted": False}}) as client:
        uri = client.open(net)
        await wait_for(lambda: client.statuses, 10, "a status")
        for settings in (
            {"fxLsp": {"severity": "warning"}},
            {},
            {"fxLsp": {"trusted": "false"}},
            {"fxLsp": {"trusted": "true"}},
            {"trusted": 1},
        ):
            client.workspace_did_change_configuration(
                types.DidChangeConfigurationParams(settings=settings)
            )
            client.save(uri)
        await asyncio.sleep(4)
        assert client.statuses[-1]["state"] == "disabled"
        assert not [p for p in client.published if p.uri == uri and p.diagnostics]
        assert not marker.exists()
        invalid = [m for m in _trust_messages(client) if "invalid trusted" in m]
        assert any("'false'" in m and "untrusted" in m for m in invalid), invalid

        # Trusted, then a settings change without ``trusted``: still trusted.
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"fxLsp": {"trusted": True}})
        )
        await client.diagnostics_for(uri, version=1)
        assert marker.exists()
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"fxLsp": {"severity": "warning"}})
        )
        await asyncio.sleep(1)
        assert client.statuses[-1]["state"] != "disabled"


async def test_root_never_above_the_opened_folder(tmp_path: pathlib.Path) -> None:
    """A parent of the opened folder (think: the home folder) has a ``.git`` and a
    ``pyproject.toml``: the leaf-module fix edits the opened folder's pyproject, and the cache
    is created there, not in the parent."""
    parent = tmp_path / "home"
    (parent / ".git").mkdir(parents=True)
    (parent / "pyproject.toml").write_text("# the user's own, not this project's\n")
    opened = parent / "project"
    shutil.copytree(pathlib.Path(__file__).parent / "workspaces" / "basic", opened)
    (opened / "pyproject.toml").unlink()
    net = opened / "pkg" / "net.py"
    line = net.read_text().splitlines().index("class UsesBlock(nn.Module):")
    async with session(opened) as client:
        uri = client.open(net)
        diagnostics = await client.diagnostics_for(uri, version=1)
        (target,) = [d for d in diagnostics if d.range.start.line == line and d.severity == 1]
        actions = await client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=target.range,
                context=types.CodeActionContext(diagnostics=[target]),
            )
        )
        (leaf,) = [a for a in actions if a.title.startswith("Treat Block as a leaf")]
        edited = {
            change.text_document.uri
            for change in leaf.edit.document_changes
            if isinstance(change, types.TextDocumentEdit)
        }
        assert edited == {from_fs_path(str(opened / "pyproject.toml"))}
    assert (opened / ".fx-lsp-cache").exists()
    assert not (parent / ".fx-lsp-cache").exists()
    assert (parent / "pyproject.toml").read_text() == "# the user's own, not this project's\n"


def test_tcp_refuses_other_hosts(tmp_path: pathlib.Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    for host in ("0.0.0.0", "192.0.2.1", "example.com", "[::]"):
        try:
            finished = subprocess.run(
                [sys.executable, "-m", "fx_lsp", "serve", "--tcp", f"{host}:{port}"],
                capture_output=True,
                text=True,
                cwd=tmp_path,
                timeout=30,
            )
        except subprocess.TimeoutExpired:
            raise AssertionError(f"--tcp {host}:0 started a server") from None
        assert finished.returncode == 2, (host, finished)
        assert "loopback" in finished.stderr


async def test_trust_revoked_while_a_trace_runs_stops_it_and_runs_nothing_more(
        tmp_path: pathlib.Path) -> None:
    """A trusted workspace whose class is still being traced when the user revokes trust: the
    worker is stopped (with every process it started), its verdict is never published, and no
    later save imports the file again."""
    workspace = new_project(tmp_path)
    imports = workspace / "imports.txt"
    net = workspace / "slow.py"
    net.write_text(
        "import pathlib, time\nimport torch\nfrom torch import nn\n\n"
        f"with open({str(imports)!r}, 'a') as log:\n    log.write('imported\\n')\n\n\n"
        "class Slow(nn.Module):\n    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
        "        time.sleep(30)\n        return x * len(x)\n")
    async with session(workspace) as client:
        uri = client.open(net)
        await wait_for(imports.exists, 60, "the file imported by a worker")
        workers = children_of(client._server.pid)
        assert workers
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"fxLsp": {"trusted": False}}))
        await wait_for(lambda: client.statuses[-1]["state"] == "disabled", 10, "disabled")
        await wait_for(lambda: not children_of(client._server.pid), 30, "no worker left")
        client.save(uri)
        await asyncio.sleep(3)
        assert not [p for p in client.published if p.uri == uri and p.diagnostics]
    assert imports.read_text() == "imported\n"
