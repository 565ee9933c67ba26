"""Settings nested 100,000 levels deep, or megabytes long, are refused with a short message and
the server keeps answering: Python's JSON parser gives up on such nesting, and pygls then
dropped the message (an ``initialize`` never answered), and a refused value was quoted whole
in the message. The messages are written as raw LSP frames: a client library would refuse to
encode them."""

from __future__ import annotations

import json
import os
import pathlib
import select
import subprocess
import sys
import time
from typing import Any

REPO = pathlib.Path(__file__).parents[3]
#: No trace runs (no file is opened): an answer takes seconds, on a loaded machine.
ANSWER_SECONDS = 60.0


class RawServer:
    def __init__(self, workspace: pathlib.Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "fx_lsp", "serve"], cwd=workspace, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": str(REPO)})
        self._buffer = b""

    def send(self, body: str) -> None:
        assert self.process.stdin is not None
        data = body.encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(data) + data)
        self.process.stdin.flush()

    def _message(self) -> dict[str, Any] | None:
        head, separator, rest = self._buffer.partition(b"\r\n\r\n")
        if not separator:
            return None
        (length,) = [int(line.split(b":")[1]) for line in head.split(b"\r\n")
                     if line.lower().startswith(b"content-length")]
        if len(rest) < length:
            return None
        self._buffer = rest[length:]
        return json.loads(rest[:length])

    def until(self, found: Any) -> list[dict[str, Any]]:
        """Every message up to and including the first one ``found`` accepts."""
        assert self.process.stdout is not None
        seen: list[dict[str, Any]] = []
        deadline = time.monotonic() + ANSWER_SECONDS
        while time.monotonic() < deadline:
            message = self._message()
            if message is not None:
                seen.append(message)
                if found(message):
                    return seen
                continue
            ready, _, _ = select.select([self.process.stdout], [], [], 1.0)
            if ready:
                self._buffer += os.read(self.process.stdout.fileno(), 1 << 20)
        raise AssertionError(f"not found among {[str(m)[:200] for m in seen]}")


def _popups(messages: list[dict[str, Any]]) -> list[str]:
    return [m["params"]["message"] for m in messages if m.get("method") == "window/showMessage"]


def test_deep_and_huge_settings_get_a_message_and_the_server_answers(
        tmp_path: pathlib.Path) -> None:
    server = RawServer(tmp_path)
    deep = "[" * 100_000 + "]" * 100_000
    try:
        server.send('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"processId":null,'
                    f'"rootUri":"{tmp_path.as_uri()}","capabilities":{{}},'
                    f'"initializationOptions":{{"debounceMs":{deep}}}}}}}')
        seen = server.until(lambda message: message.get("id") == 1)
        assert "capabilities" in seen[-1]["result"]
        assert any("invalid debounceMs = [[[[...]]]]" in popup for popup in _popups(seen)), seen
        server.send('{"jsonrpc":"2.0","method":"initialized","params":{}}')

        server.send('{"jsonrpc":"2.0","method":"workspace/didChangeConfiguration",'
                    f'"params":{{"settings":{{"fxLsp":{{"timeout":{deep}}}}}}}}}')
        # Another key than at initialize: a problem said already is not said again.
        seen = server.until(lambda message: message.get("method") == "window/showMessage")
        assert "invalid timeout = [[[[...]]]]" in _popups(seen)[-1]

        huge = json.dumps({"jsonrpc": "2.0", "method": "workspace/didChangeConfiguration",
                           "params": {"settings": {"fxLsp": {"debounceMs": "x" * 10_000_000}}}})
        server.send(huge)
        seen = server.until(lambda message: message.get("method") == "window/showMessage")
        assert "invalid debounceMs = 'xxx" in _popups(seen)[-1]
        assert all(len(popup) < 400 for popup in _popups(seen)), [p[:300] for p in _popups(seen)]
        server.send('{"jsonrpc":"2.0","id":2,"method":"shutdown"}')
        server.until(lambda message: message.get("id") == 2)
    finally:
        server.process.kill()
        server.process.wait()
