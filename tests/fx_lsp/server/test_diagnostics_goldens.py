"""The server publishes the diagnostics it published when ``tests/golden/outputs/`` was
recorded, byte for byte once sorted, on the golden workspaces of ``output_goldens``: those of
every file after a workspace trace (closed files, a notebook's on its file), then those of
each file and notebook opened (a notebook's in its cells)."""

from __future__ import annotations

import json
import pathlib
import time

import pytest
from lsprotocol import types
from pygls.protocol import default_converter

from lsp_support import FxClient, session, wait_for
from output_goldens import WORKSPACES, copy_workspace, differences, normalised

_CONVERTER = default_converter()


def _idle(client: FxClient) -> bool:
    return bool(client.statuses) and client.statuses[-1]["state"] == "idle" \
        and client.statuses[-1]["pending"] == 0


async def _settled(client: FxClient, quiet: float = 2.0) -> None:
    """Idle, with nothing published for ``quiet`` seconds (every capture mode reported)."""
    count, since = -1, time.monotonic()

    def still() -> bool:
        nonlocal count, since
        if len(client.published) != count or not _idle(client):
            count, since = len(client.published), time.monotonic()
        return time.monotonic() - since >= quiet

    await wait_for(still, 120, "the server idle and quiet")


def _shown(client: FxClient, after: int) -> dict[str, list[dict[str, object]]]:
    """Each URI's last publish after index ``after``: its diagnostics as JSON, sorted."""
    latest: dict[str, list[dict[str, object]]] = {}
    for params in client.published[after:]:
        latest[params.uri] = sorted(
            (_CONVERTER.unstructure(diagnostic) for diagnostic in params.diagnostics),
            key=lambda diagnostic: json.dumps(diagnostic, sort_keys=True))
    return dict(sorted(latest.items()))


def _open_all(client: FxClient, folder: pathlib.Path) -> None:
    """Every Python file and notebook of ``folder`` opened, as an editor opens them."""
    for path in sorted(folder.rglob("*.py")):
        client.open(path)
    for path in sorted(folder.rglob("*.ipynb")):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        client.open_notebook(path, [(cell["cell_type"], "".join(cell["source"]))
                                    for cell in cells])


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(WORKSPACES))
async def test_published_diagnostics_are_what_they_were(name: str,
                                                        tmp_path: pathlib.Path) -> None:
    folder = copy_workspace(name, tmp_path)
    async with session(folder, notebooks=True) as client:
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="fxLsp.server.traceWorkspace", arguments=[]))
        await _settled(client)
        closed = _shown(client, 0)
        opened_from = len(client.published)
        _open_all(client, folder)
        await wait_for(lambda: len(client.published) > opened_from, 60, "a publish")
        await _settled(client)
        opened = _shown(client, opened_from)
    text = json.dumps({"closed": closed, "opened": opened}, indent=1, sort_keys=True) + "\n"
    assert differences({f"{name}.diagnostics.json": normalised(text, folder)}) == []
