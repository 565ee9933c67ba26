"""The server's log says at start which network isolation its workers get."""

from __future__ import annotations

import pathlib

from lsp_support import session, wait_for

MECHANISMS = ("network namespace", "user+network namespace", "Python socket block only (")


async def test_the_log_names_the_network_isolation_at_start(workspace: pathlib.Path) -> None:
    async with session(workspace) as client:
        def logged() -> list[str]:
            return [m.message for m in client.log_messages
                    if m.message.startswith("fx-lsp: network isolation: ")]

        (line,) = await wait_for(logged, what="the network isolation log line")
        assert line.removeprefix("fx-lsp: network isolation: ").startswith(MECHANISMS), line
