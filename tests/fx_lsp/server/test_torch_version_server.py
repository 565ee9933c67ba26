"""The torch version policy in the language server: a real ``fx-lsp serve`` that sees an older
torch shows one error and traces nothing; one that sees a newer torch says in the log that it is
untested, and traces. The version is faked in the installed metadata, as in
tests/fxcore/host/test_torch_versions.py."""

from __future__ import annotations

import asyncio
import pathlib

import pytest
from lsprotocol import types
from process_tree import children_of

from engine_support import MARKING_MODEL, fake_torch_metadata
from lsp_support import new_project, session, wait_for

#: Tracing starts a worker with torch on a shared machine: minutes, not seconds, at worst.
PUBLISH_SECONDS = 180.0


async def test_an_older_torch_shows_one_error_and_starts_no_worker(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", fake_torch_metadata(tmp_path / "fake", "2.5.1"))
    workspace = new_project(tmp_path)
    (workspace / "model.py").write_text(MARKING_MODEL)
    async with session(workspace) as client:
        uri = client.open(workspace / "model.py")
        errors = await wait_for(
            lambda: [m.message for m in client.messages if m.type == types.MessageType.Error],
            30, "the error pop-up")
        assert len(errors) == 1
        assert errors[0].startswith("fx-lsp needs torch >= 2.10 (found 2.5.1): ")
        await wait_for(lambda: client.statuses, 30, "a status")
        assert client.statuses[-1] == {"state": "error", "pending": 0, "message": errors[0]}
        # Room for a trace to start, had the document been scheduled (as the untrusted test).
        await asyncio.sleep(3)
        assert not [p for p in client.published if p.uri == uri and p.diagnostics]
        assert not (workspace / "imported.txt").exists()
        assert children_of(client._server.pid) == []  # not even the torch worker


@pytest.mark.slow
async def test_a_newer_torch_is_logged_as_untested_and_traced(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", fake_torch_metadata(tmp_path / "fake", "2.16.0"))
    workspace = new_project(tmp_path)
    (workspace / "model.py").write_text(MARKING_MODEL)
    async with session(workspace) as client:
        uri = client.open(workspace / "model.py")
        diagnostics = await client.diagnostics_for(uri, version=1, timeout=PUBLISH_SECONDS)
        assert [d.code for d in diagnostics] == ["FX001"]
        untested = [m.message for m in client.log_messages if "tested with torch" in m.message]
        assert untested == ["fx-lsp is tested with torch 2.10 to 2.15, not 2.16.0: it runs, and "
                            "the torch internals its capture modes hook are feature-detected (a "
                            "missing one is reported as such), but verdicts may differ from a "
                            "tested release"]
        assert not [m for m in client.messages if m.type == types.MessageType.Error]
