"""A real ``fx-lsp mcp`` server over stdio for the MCP tests: started in a workspace as a
client would start it, initialised, its stderr in a file the test may read afterwards. Import
it after ``pytest.importorskip("mcp")``: it needs the mcp extra."""

from __future__ import annotations

import os
import pathlib
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TextIO

from mcp import ClientSession, StdioServerParameters, stdio_client

REPO = pathlib.Path(__file__).parents[2]


@asynccontextmanager
async def mcp_session(workspace: pathlib.Path, errors: TextIO,
                      *options: str) -> AsyncIterator[ClientSession]:
    """A session with a server run in ``workspace`` with ``options``, its stderr to ``errors``
    (a temporary file, never beside a workspace: examples/'s parent is the repository)."""
    params = StdioServerParameters(command=sys.executable, args=["-m", "fx_lsp", "mcp", *options],
                                   cwd=str(workspace), env={**os.environ, "PYTHONPATH": str(REPO)})
    async with stdio_client(params, errlog=errors) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        yield session
