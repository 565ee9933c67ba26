"""A real server publishes a big file's verdicts as its worker sends them: before the job
ends, the classes judged so far (``fxLsp/traced``'s ``unjudged``: how many are still to come),
each as the final publish shows it; the final publish replaces them and equals what
``fx-lsp check`` reports."""

from __future__ import annotations

import json
import pathlib

import pytest
from lsprotocol import types

from fx_lsp.server.partial_publishing import PARTIAL_CLASSES

from cli_support import fx_lsp
from lsp_support import FxClient, new_project, session, wait_for

#: Classes judged before the gate: each has one FX002 (``len`` of a traced tensor); with the
#: gate, as many as a job needs for its verdicts so far to be published.
CLASSES = PARTIAL_CLASSES - 1


def _source(count: int, release: pathlib.Path | None = None) -> str:
    """``count`` trivial classes, and with ``release`` a last one whose ``forward`` waits until
    that file exists: the job cannot end before the test has seen what it published."""
    parts = ["import os", "import time", "", "from torch import nn", ""]
    for number in range(count):
        parts.append(f"class Net{number:04}(nn.Module):\n"
                     f"    def forward(self, x):\n"
                     f"        return x * len(x) + {number}\n")
    if release is not None:
        parts.append("class Gate(nn.Module):\n"
                     "    def forward(self, x):\n"
                     f"        while not os.path.exists({str(release)!r}):\n"
                     "            time.sleep(0.05)\n"
                     "        return x * len(x)\n")
    return "\n".join(parts)


def _shown(params: types.PublishDiagnosticsParams) -> set[tuple[str, int, str]]:
    return {(str(d.code), d.range.start.line + 1, d.message) for d in params.diagnostics}


def _checked(workspace: pathlib.Path, path: pathlib.Path) -> set[tuple[str, int, str]]:
    done = fx_lsp("check", "--output-format", "json", "--no-cache", str(path), cwd=workspace)
    return {(problem["code"], problem["line"], problem["message"])
            for problem in json.loads(done.stdout)["diagnostics"]}


def _publishes(client: FxClient, uri: str) -> list[tuple[dict, types.PublishDiagnosticsParams]]:
    """Each ``fxLsp/traced`` of ``uri`` at version 1 with the publish just before it (the
    server publishes a result's diagnostics, then says it traced)."""
    published = [params for params in client.published if params.uri == uri]
    traced = [params for params in client.traced if params["uri"] == uri]
    assert len(published) == len(traced)
    return [(said, shown) for said, shown in zip(traced, published, strict=True)
            if said["version"] == 1]


@pytest.mark.slow  # a server, its zygote and the command line, each tracing the file
async def test_the_classes_judged_so_far_are_published_before_the_job_ends(
        tmp_path: pathlib.Path) -> None:
    workspace = new_project(tmp_path)
    release = tmp_path / "release"
    models = workspace / "models.py"
    models.write_text(_source(CLASSES, release))
    async with session(workspace) as client:
        uri = client.open(models)
        # The gate holds the job: what comes first is the verdicts so far.
        await wait_for(lambda: any(said.get("unjudged") for said in client.traced), 300,
                       "the verdicts so far")
        release.touch()
        await wait_for(lambda: any(said["unjudged"] == 0 and said["pending"] == []
                                   for said in client.traced), 300, "the job's result")
        publishes = _publishes(client, uri)
    *partial, (last, final) = publishes
    assert partial and last["unjudged"] == 0
    assert len(last["classes"]) == CLASSES + 1
    for said, shown in partial:
        assert said["pending"] == ["fx"] and said["unjudged"] > 0
        assert len(said["classes"]) + said["unjudged"] == CLASSES + 1
        assert len(said["classes"]) < CLASSES + 1
        # Each class as the final publish shows it: nothing it contradicts.
        assert _shown(shown) <= _shown(final)
        assert len(_shown(shown)) == len(said["classes"])
    assert len(_shown(final)) == CLASSES + 1
    assert _shown(final) == _checked(workspace, models)


@pytest.mark.slow  # the file's classes take their whole `file-timeout` (ten seconds scaled)
async def test_a_file_of_thousands_of_classes_shows_its_verdicts_within_its_file_timeout(
        tmp_path: pathlib.Path) -> None:
    workspace = new_project(tmp_path)
    with (workspace / "pyproject.toml").open("a") as config:
        config.write("\n[tool.fx-lsp]\nfile-timeout = 1\n")
    many = workspace / "many.py"
    many.write_text(_source(2000))
    async with session(workspace) as client:
        uri = client.open(many)
        await wait_for(lambda: any(said["pending"] == [] for said in client.traced), 300,
                       "the file's result")
        publishes = _publishes(client, uri)
    *partial, (last, final) = publishes
    # Thousands of classes take longer than the file's time: the rest are not reached.
    assert partial and last["unjudged"] == 0 and len(last["classes"]) == 2000
    reached = {line for code, line, _ in _shown(final) if code == "FX002"}
    assert 0 < len(reached) < 2000
    for said, shown in partial:
        assert said["unjudged"] > 0 and len(said["classes"]) <= len(reached)
        assert _shown(shown) <= _shown(final)
    # A class judged in `fx-lsp check`'s own time too gets the same diagnostic there.
    checked = _checked(workspace, many)
    both = reached & {line for code, line, _ in checked if code == "FX002"}
    assert both
    assert {found for found in _shown(final) if found[1] in both} == \
        {found for found in checked if found[1] in both}
