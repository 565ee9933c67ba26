"""A real server publishes a trace in stages: fx, then every mode's single call (compile
without its loop of calls), then compile's loop findings (the loop's job run beside the single
calls', published after them), each publish holding the earlier stages' diagnostics; the last
equals what one job of every mode (``fx-lsp check``) reports; ``fxLsp/traced`` and pull
reports name the stages still to come (``pending``)."""

from __future__ import annotations

import asyncio
import itertools
import json
import pathlib

import pytest
from lsprotocol import types
from recompiling_block import RECOMPILES

from cli_support import fx_lsp
from lsp_support import FxClient, RawResponse, new_project, session, wait_for

MODELS = """\
from torch import nn


class Lengthy(nn.Module):
    def forward(self, x):
        return x * len(x)
"""
MODES = ["fx", "export", "compile"]


def _shown(diagnostics: list[types.Diagnostic]) -> set[tuple[str, str, int]]:
    return {(str(d.code), d.source or "", d.range.start.line + 1) for d in diagnostics}


def _source(mode: str) -> str:
    return "fx-lsp" if mode == "fx" else f"fx-lsp ({mode})"


def _traced(client: FxClient, uri: str, version: int) -> list[list[str]]:
    """The ``pending`` of each ``fxLsp/traced`` of ``uri`` at ``version``, in order."""
    return [params["pending"] for params in client.traced
            if params["uri"] == uri and params["version"] == version]


@pytest.mark.slow  # torch.compile's loop of calls recompiles for seconds
async def test_stages_arrive_in_order_and_the_last_is_the_single_jobs(
        tmp_path: pathlib.Path) -> None:
    workspace = new_project(tmp_path)
    block = workspace / "block.py"
    block.write_text(RECOMPILES)
    async with session(workspace, options={"modes": MODES}) as client:
        uri = client.open(block)
        await wait_for(lambda: [] in _traced(client, uri, 1), 600, "every stage of version 1")
        publishes = [_shown(params.diagnostics) for params in client.published
                     if params.uri == uri and params.version == 1]
    pending = _traced(client, uri, 1)
    # fx alone, then the single calls (side by side: one publish each), then the loop.
    assert pending[0] == ["export", "compile", "compile-loop"]
    assert pending[-2:] == [["compile-loop"], []]
    assert all(set(later) < set(earlier) for earlier, later in itertools.pairwise(pending))
    assert len(publishes) == len(pending)
    assert {source for _, source, _ in publishes[0]} == {"fx-lsp"}
    single, final = publishes[-2], publishes[-1]
    assert ("GB0059", "fx-lsp (compile)", 13) in single
    assert not any(code == "FX506" for code, _, _ in single)
    assert any(code == "FX506" for code, _, _ in final)
    assert single - final == set()  # nothing an earlier stage showed is lost
    checked = fx_lsp("check", "--output-format", "json", "--no-cache", "--mode",
                     ",".join(MODES), str(block), cwd=workspace)
    one_job = {(problem["code"], _source(problem["mode"]), problem["line"])
               for problem in json.loads(checked.stdout)["diagnostics"]}
    assert final == one_job


async def _pull(client: FxClient, uri: str) -> dict:
    """A ``textDocument/diagnostic`` answer as JSON (the typed report has no ``pending``);
    bounded, so that a pull that waits for the slow mode fails rather than hangs."""
    client.protocol.get_result_type = lambda method: RawResponse
    return await asyncio.wait_for(client.protocol.send_request_async(
        types.TEXT_DOCUMENT_DIAGNOSTIC,
        types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri=uri))),
        300)


@pytest.mark.slow
async def test_a_pull_answers_after_the_first_stage_naming_the_modes_still_to_come(
        tmp_path: pathlib.Path, release: pathlib.Path) -> None:
    workspace = new_project(tmp_path)
    models = workspace / "models.py"
    models.write_text(MODELS)
    async with session(workspace, options={"modes": ["fx", "slow"]}, pulls=True,
                       refreshes=True) as client:
        uri = client.open(models)
        early = await _pull(client, uri)  # the slow mode waits for the release file
        release.touch()
        await wait_for(lambda: _traced(client, uri, 1)[-1:] == [[]], 300, "the slow stage")
        late = await _pull(client, uri)
    assert early["pending"] == ["slow"]
    assert {item["code"] for item in early["items"]} == {"FX002"}
    assert late["pending"] == []
    assert {(item["code"], item["source"]) for item in late["items"]} == {
        ("FX002", "fx-lsp"), ("FX199", "fx-lsp (slow)")}


def _entries(folder: pathlib.Path) -> set[pathlib.Path]:
    """The files of a result cache folder (none before it exists)."""
    return {path for path in folder.rglob("*") if path.is_file()}


@pytest.mark.slow  # the loop of calls recompiles for seconds
async def test_the_loop_runs_beside_the_single_calls_and_is_published_after_them(
        tmp_path: pathlib.Path, release: pathlib.Path) -> None:
    workspace = new_project(tmp_path)
    block = workspace / "block.py"
    block.write_text(RECOMPILES)
    cache = workspace / ".fx-lsp-cache"
    async with session(workspace, options={"modes": ["fx", "slow", "compile"]}) as client:
        uri = client.open(block)
        await wait_for(lambda: bool(_traced(client, uri, 1)), 300, "fx's stage")
        after_fx = _entries(cache)
        # The single calls wait for the release file; the loop's job, beside them, ends and
        # keeps its result in the cache.
        await wait_for(lambda: len(_entries(cache)) > len(after_fx), 600,
                       "the loop's result while the single calls wait")
        await asyncio.sleep(0)
        while_waiting = _traced(client, uri, 1)
        release.touch()
        await wait_for(lambda: [] in _traced(client, uri, 1), 300, "every stage of version 1")
        publishes = [_shown(params.diagnostics) for params in client.published
                     if params.uri == uri and params.version == 1]
    # Held while the single calls run: only fx's publish, the loop still pending.
    assert while_waiting == [["slow", "compile", "compile-loop"]]
    assert _traced(client, uri, 1)[1:] == [["compile-loop"], []]
    single, final = publishes[-2:]
    assert any(source == "fx-lsp (slow)" for _, source, _ in single)
    assert not any(code == "FX506" for code, _, _ in single)
    assert any(code == "FX506" for code, _, _ in final) and single - final == set()
