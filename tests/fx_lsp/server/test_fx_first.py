"""With several capture modes, a real server publishes a document's fx diagnostics as soon as
fx has its verdicts, before a slower mode has reported, then fx and that mode together; an
edit while the slow mode runs drops that mode's result of the old text.

The slow mode (``tests/support/plain_capture.py``'s ``WaitsForRelease``) waits until the test
creates a release file, so the order is decided by the test, not by timing."""

from __future__ import annotations

import pathlib

import pytest

from lsp_support import FxClient, new_project, session, wait_for

MODELS = """\
from torch import nn


class Lengthy(nn.Module):
    def forward(self, x):
        return x * len(x)
"""


def _sources_and_lines(diagnostics: list) -> set[tuple[str, str, int]]:
    return {(d.source, str(d.code), d.range.start.line) for d in diagnostics}


def _slow_publishes(client: FxClient, version: int) -> list:
    """The publishes for ``version`` that carry the slow mode's result."""
    return [params for params in client.published
            if params.version == version and any(d.source == "fx-lsp (slow)"
                                                 for d in params.diagnostics)]


@pytest.mark.slow
async def test_fx_diagnostics_come_before_the_slow_modes(
    tmp_path: pathlib.Path, release: pathlib.Path
) -> None:
    workspace = new_project(tmp_path)
    models = workspace / "models.py"
    models.write_text(MODELS)
    async with session(workspace, options={"modes": ["fx", "slow"]}) as client:
        uri = client.open(models)
        first = await client.diagnostics_for(uri, version=1)
        # Published while the slow mode still waits: fx's alone.
        assert _sources_and_lines(first) == {("fx-lsp", "FX002", 5)}
        mark = len(client.published)
        release.touch()
        both = await client.settled_diagnostics(uri, version=1, after=mark)
    assert _sources_and_lines(both) == {("fx-lsp", "FX002", 5),
                                        ("fx-lsp (slow)", "FX199", 5)}


@pytest.mark.slow
async def test_an_edit_while_the_slow_mode_runs_never_shows_its_old_result(
    tmp_path: pathlib.Path, release: pathlib.Path
) -> None:
    workspace = new_project(tmp_path)
    models = workspace / "models.py"
    models.write_text(MODELS)
    async with session(workspace, options={"modes": ["fx", "slow"]}) as client:
        uri = client.open(models)
        await client.diagnostics_for(uri, version=1)
        # Two lines above everything: the failures move down by two.
        version = client.replace_text(uri, "# a\n# b\n" + MODELS)
        # The edit read before the slow mode ends: under load, the worker's answer could
        # otherwise come first (a publish for version 1 that the server rightly sends).
        await client.handled_so_far(uri)
        release.touch()
        client.save(uri)
        settled = await client.settled_diagnostics(uri, version=version)
        await wait_for(lambda: client.statuses[-1]["state"] == "idle", 10, "idle")
    assert _sources_and_lines(settled) == {("fx-lsp", "FX002", 7),
                                           ("fx-lsp (slow)", "FX199", 7)}
    assert _slow_publishes(client, version=1) == []


@pytest.mark.slow
async def test_a_slow_result_read_before_the_edit_is_shown_for_its_own_version_only(
    tmp_path: pathlib.Path, release: pathlib.Path
) -> None:
    """The order load once gave the test above: the slow mode's answer reached the server
    before the edit did. Made on demand here: the answer is published for version 1, at
    version 1's lines, and the edit's version gets its own."""
    workspace = new_project(tmp_path)
    models = workspace / "models.py"
    models.write_text(MODELS)
    async with session(workspace, options={"modes": ["fx", "slow"]}) as client:
        uri = client.open(models)
        await client.diagnostics_for(uri, version=1)
        release.touch()
        await wait_for(lambda: _slow_publishes(client, version=1), 300,
                       "the slow mode's result of version 1")
        version = client.replace_text(uri, "# a\n# b\n" + MODELS)
        client.save(uri)
        settled = await client.settled_diagnostics(uri, version=version)
    assert _sources_and_lines(settled) == {("fx-lsp", "FX002", 7),
                                           ("fx-lsp (slow)", "FX199", 7)}
    of_version_1 = {line for params in client.published if params.version == 1
                    for (_, _, line) in _sources_and_lines(params.diagnostics)}
    assert of_version_1 == {5}
