"""``fx-lsp mcp`` answers every message, however deep or large its arguments: a tool argument
nested 100,000 levels deep (which the SDK's parser gives up on, without a reply) gets an error
that says why, an invalid 10 MB argument an error that does not echo it whole, and the server
goes on answering. The messages are written as raw JSON lines: a client library would refuse
to send them."""

from __future__ import annotations

import json
import os
import pathlib
import select
import subprocess
import sys
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp extra (pip install 'fx-lsp[mcp]')")

REPO = pathlib.Path(__file__).parents[3]
#: An answer needs no trace (no worker starts): seconds, on a loaded machine.
ANSWER_SECONDS = 60.0


class RawSession:
    def __init__(self, workspace: pathlib.Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "fx_lsp", "mcp"], cwd=workspace, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": str(REPO)})

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode() + b"\n")
        self.process.stdin.flush()

    def answer(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], ANSWER_SECONDS)
        assert ready, "no answer"
        line = self.process.stdout.readline()
        assert len(line) < 10_000, line[:300]
        return json.loads(line)

    def call(self, number: int, tool: str, arguments: str) -> dict[str, Any]:
        self.send(f'{{"jsonrpc":"2.0","id":{number},"method":"tools/call",'
                  f'"params":{{"name":"{tool}","arguments":{arguments}}}}}')
        answer = self.answer()
        assert answer["id"] == number, answer
        return answer


def _tool_error(answer: dict[str, Any]) -> str:
    assert answer["result"]["isError"], answer
    return " ".join(part["text"] for part in answer["result"]["content"])


def test_deep_and_huge_arguments_get_an_error_with_the_reason(tmp_path: pathlib.Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'w'\n")
    session = RawSession(tmp_path)
    try:
        session.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"}}}))
        assert session.answer()["id"] == 1
        session.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')

        deep = session.call(2, "check", '{"paths":' + "[" * 100_000 + "]" * 100_000 + "}")
        assert "nested more than 64 levels deep" in deep["error"]["message"], deep

        huge = "x" * 10_000_000
        not_a_list = _tool_error(session.call(3, "check", json.dumps({"paths": huge})))
        assert "valid list" in not_a_list
        no_such_path = _tool_error(session.call(4, "check", json.dumps({"paths": [huge]})))
        assert "no such file or folder" in no_such_path and "characters left out" in no_such_path

        explained = session.call(5, "explain", '{"code":"FX001"}')
        assert not explained["result"].get("isError"), explained
    finally:
        session.process.kill()
        session.process.wait()
