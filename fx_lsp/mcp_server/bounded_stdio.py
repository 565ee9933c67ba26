"""The MCP SDK's stdio transport, with each message's depth bounded before the SDK parses it.

pydantic's JSON parser gives up on a message nested thousands of levels deep (a tool argument
``[[[[...]]]]``) and the SDK then drops it without a reply: the client waits for an answer
that never comes. Here each line read from stdin is measured first (``fx_lsp.bounded_input``);
one nested too deep is answered with a JSON-RPC error that says so, on the SDK's own writer,
and never reaches the SDK. Every other line goes on unchanged.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import AsyncIterator
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, ErrorData, JSONRPCError

from fxcore.workspace.json_nesting import too_deep


def request_id(line: str) -> str | int | None:
    """The ``id`` of a JSON-RPC message's top-level object, read without parsing the rest
    (which may be too deep to parse); None when it has none that can be read."""
    depth, index, in_key = 0, 0, False
    while index < len(line):
        character = line[index]
        if character == '"':
            end = _string_end(line, index)
            if depth == 1 and not in_key and line[index:end] == '"id"':
                colon = line[end:].lstrip()
                if colon.startswith(":"):
                    return _scalar(colon[1:].lstrip())
            in_key = depth == 1 and not in_key and line[end:].lstrip().startswith(":")
            index = end
            continue
        if character in "[{":
            depth += 1
        elif character in "]}":
            depth -= 1
        elif character == ",":
            in_key = False
        index += 1
    return None


def _string_end(text: str, start: int) -> int:
    """The index just past the JSON string that starts at ``start``."""
    index = start + 1
    while index < len(text):
        if text[index] == "\\":
            index += 2
        elif text[index] == '"':
            return index + 1
        else:
            index += 1
    return index


def _scalar(text: str) -> str | int | None:
    """The number or string at the start of ``text``; None for anything else."""
    if not text or text[0] in "[{":
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(text)
    except ValueError:
        return None
    return value if isinstance(value, (str, int)) and not isinstance(value, bool) else None


class BoundedLines:
    """stdin's lines as the SDK's reader takes them, a line nested too deep answered here."""

    def __init__(self, wire: Any) -> None:
        self._wire = wire
        self._replies: Any = None
        self._ready = anyio.Event()

    def answer_on(self, write_stream: Any) -> None:
        """Where refusals are written: the SDK's writer, once it exists."""
        self._replies = write_stream
        self._ready.set()

    async def __aiter__(self) -> AsyncIterator[str]:
        async for line in self._wire:
            reason = too_deep(line, "the message")
            if reason is None:
                yield line
                continue
            await self._ready.wait()
            await self._replies.send(SessionMessage(JSONRPCError(
                jsonrpc="2.0", id=request_id(line),
                error=ErrorData(code=INVALID_REQUEST, message=f"fx-lsp mcp: {reason}"))))


async def serve_bounded_stdio(server: MCPServer) -> None:
    """``server.run("stdio")``, each message's depth bounded (``BoundedLines``). Like the
    SDK's own transport, file descriptor 0 reads the null device while it serves, so that
    nothing it starts (git, the workers) reads the client's messages."""
    wire_fd = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        with os.fdopen(wire_fd, "r", encoding="utf-8", errors="replace", closefd=False) as wire:
            lines = BoundedLines(anyio.wrap_file(wire))
            async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
                lines.answer_on(write_stream)
                # The SDK's MCPServer runs its low-level server on its own transport alone.
                lowlevel = server._lowlevel_server
                await lowlevel.run(read_stream, write_stream,
                                   lowlevel.create_initialization_options())
    finally:
        os.dup2(wire_fd, 0)
        os.close(wire_fd)
