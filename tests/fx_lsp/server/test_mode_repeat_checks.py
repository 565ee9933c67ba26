"""The same workspace checked again in one server session gives the same diagnostics, with
``fxLsp.modes`` = fx, export, compile: open, save, save again, and the traceWorkspace command
twice, over a real server, on a file with an FX001, an FX401 and a GB0170."""

from __future__ import annotations

import pathlib

import pytest
from lsprotocol import types
from test_mode_suppression_fixes import CONFIG, MODEL, MODES

from lsp_support import session, wait_for


def _seen(diagnostics: list[types.Diagnostic]) -> list[tuple[object, ...]]:
    return sorted((str(d.code), d.source, d.severity, d.range.start.line, d.range.start.character,
                   d.range.end.line, d.range.end.character, d.message) for d in diagnostics)


@pytest.mark.slow
async def test_checking_twice_gives_the_same_diagnostics(tmp_path: pathlib.Path) -> None:
    (tmp_path / "pyproject.toml").write_text(CONFIG)
    net = tmp_path / "net.py"
    net.write_text(MODEL)
    async with session(tmp_path, options={"modes": MODES}) as client:
        uri = client.open(net)
        first = _seen(await client.settled_diagnostics(uri, version=1))
        assert {"FX001", "FX401", "GB0170"} <= {row[0] for row in first}
        rounds = []
        for _ in range(2):
            mark = len(client.published)
            client.save(uri)
            rounds.append(_seen(await client.settled_diagnostics(uri, after=mark)))
        for _ in range(2):
            mark = len(client.published)
            await client.workspace_execute_command_async(types.ExecuteCommandParams(
                command="fxLsp.server.traceWorkspace", arguments=[]))
            rounds.append(_seen(await client.settled_diagnostics(uri, after=mark)))
        assert rounds == [first] * 4
        await wait_for(lambda: client.statuses[-1]["state"] == "idle", 10, "idle")
