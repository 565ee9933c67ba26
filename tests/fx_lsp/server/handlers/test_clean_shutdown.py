"""``fx-lsp serve`` told to shut down and exit, and ``fx-lsp mcp`` whose client closes its
input, while a trace still runs: each exits with nothing on stderr (no traceback from a callback
that finds the event loop closed) and leaves no worker or zygote process behind. Done several
times, since the race it guards against is timing-dependent."""

from __future__ import annotations

import io
import json
import logging
import os
import pathlib
import signal
import subprocess
import sys
import threading
import time

import pytest
from lsprotocol import types
from process_tree import children_of
from pygls.io_ import StdoutWriter
from pygls.uris import from_fs_path

from fx_lsp.server.language_server import FxLanguageServer

REPO = pathlib.Path(__file__).parents[4]
#: A file whose import takes seconds: its trace is still running when the client leaves.
SLOW = """import time

import torch
from torch import nn

time.sleep({seconds})


class UsesLen(nn.Module):
    def forward(self, x):
        return x * len(x)
"""
ROUNDS = 3


def _alive(pid: int) -> bool:
    try:
        state = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _lsp(message: dict[str, object]) -> bytes:
    body = json.dumps(message).encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _workspace(tmp_path: pathlib.Path, seconds: float) -> pathlib.Path:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    (workspace / "pyproject.toml").write_text("[project]\nname = 'w'\n")
    (workspace / "slow.py").write_text(SLOW.format(seconds=seconds))
    return workspace


def _ended_cleanly(process: subprocess.Popen[bytes], helpers: list[int], what: str) -> None:
    assert process.stderr is not None
    # Read while it ends: a server that writes more than a pipe holds (64 KiB) to stderr would
    # otherwise block there and never exit (a hang, not the text that says why).
    written: list[bytes] = []
    reader = threading.Thread(target=lambda: written.append(process.stderr.read()))
    reader.start()
    try:
        process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        # Where it hangs: the server runs with -X faulthandler, which prints every thread's
        # stack on SIGABRT (seen in a loaded slow tier: no exit within 60 s of ``exit``).
        process.send_signal(signal.SIGABRT)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
        reader.join()
        raise AssertionError(f"{what}: no exit within 60 s; its stderr and threads:\n"
                             f"{b''.join(written).decode()[-8000:]}") from None
    reader.join()
    stderr = b"".join(written)
    deadline = time.monotonic() + 15
    while any(_alive(pid) for pid in helpers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [pid for pid in helpers if _alive(pid)] == [], f"{what}: processes left behind"
    assert stderr.decode() == "", f"{what}: stderr not empty:\n{stderr.decode()[-8000:]}"


def _wait_for_helpers(pid: int) -> list[int]:
    """The server's worker processes, once its trace has started them."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        helpers = children_of(pid)
        if len(helpers) >= 2:  # the zygote and the worker it forked
            return helpers
        time.sleep(0.1)
    raise AssertionError("no trace started")


@pytest.mark.slow  # several servers started and stopped mid-trace
def test_the_language_server_ends_cleanly_mid_trace(tmp_path: pathlib.Path) -> None:
    for round_ in range(ROUNDS):
        workspace = _workspace(tmp_path, 8 + round_ / 10)
        uri = from_fs_path(str(workspace / "slow.py"))
        server = subprocess.Popen(
            [sys.executable, "-X", "faulthandler", "-m", "fx_lsp", "serve", "--stdio"],
            cwd=workspace,
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(REPO)})
        assert server.stdin is not None
        server.stdin.write(_lsp({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "processId": None, "rootUri": from_fs_path(str(workspace)), "capabilities": {}}}))
        server.stdin.write(_lsp({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        server.stdin.write(_lsp({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
            "textDocument": {"uri": uri, "languageId": "python", "version": 1,
                             "text": (workspace / "slow.py").read_text()}}}))
        server.stdin.flush()
        helpers = _wait_for_helpers(server.pid)
        time.sleep(0.5 * round_)  # the trace at different points
        server.stdin.write(_lsp({"jsonrpc": "2.0", "id": 2, "method": "shutdown"}))
        server.stdin.write(_lsp({"jsonrpc": "2.0", "method": "exit"}))
        server.stdin.close()
        _ended_cleanly(server, helpers, f"serve, round {round_}")


@pytest.mark.slow  # several servers started and stopped mid-trace
def test_the_mcp_server_ends_cleanly_mid_trace(tmp_path: pathlib.Path) -> None:
    pytest.importorskip("mcp", reason="the mcp extra (pip install 'fx-lsp[mcp]')")
    for round_ in range(ROUNDS):
        # A new text each round: not answered from the cache the last round's check filled.
        workspace = _workspace(tmp_path, 8 + round_ / 10)
        server = subprocess.Popen(
            [sys.executable, "-X", "faulthandler", "-m", "fx_lsp", "mcp"], cwd=workspace,
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(REPO)})
        assert server.stdin is not None
        for message in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "check", "arguments": {"paths": ["slow.py"]}}},
        ):
            server.stdin.write(json.dumps(message).encode() + b"\n")
        server.stdin.flush()
        helpers = _wait_for_helpers(server.pid)
        time.sleep(0.5 * round_)
        server.stdin.close()  # the client is gone
        _ended_cleanly(server, helpers, f"mcp, round {round_}")


def test_nothing_is_sent_after_exit(caplog: pytest.LogCaptureFixture) -> None:
    """A message sent after the client's ``exit`` (a trace that ends while the event loop
    winds down publishes its result) writes nothing and reports nothing. pygls closes stdout
    on ``exit``: such a send failed, pygls reported the failure by sending it to the client,
    which failed again, and so on, chaining tracebacks on stderr until its pipe was full and
    the server hung (the language server test above, run three at a time under load, failed
    7 of 18 times so)."""
    server = FxLanguageServer()
    stdout = io.BytesIO()
    server.protocol.set_writer(StdoutWriter(stdout))
    with pytest.raises(SystemExit):
        for _ in server.protocol.lsp_exit():
            pass
    assert stdout.closed
    with caplog.at_level(logging.DEBUG):
        server.window_log_message(types.LogMessageParams(types.MessageType.Info, "late"))
        server.text_document_publish_diagnostics(types.PublishDiagnosticsParams("file:///m.py",
                                                                                []))
    assert [record.getMessage() for record in caplog.records
            if record.levelno >= logging.WARNING] == []
