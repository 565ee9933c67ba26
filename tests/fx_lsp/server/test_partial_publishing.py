"""A running trace's verdicts so far (``fx_lsp.server.partial_publishing``) through the document
model, driven by a fake engine: published with the trace's earlier phases and the number of
classes still to judge, replaced by the phase's result, and never for an edited text, a held
phase, a phase with nothing left to judge or a job of a few classes."""

from __future__ import annotations

import pytest
from document_fakes import FakeServer, module, settle

from fx_lsp.server import documents
from fx_lsp.server.partial_publishing import PARTIAL_CLASSES
from fxcore.model.partial_result import PartialResult
from fxcore.model.results import FileResult

PATH = "/project/a.py"


@pytest.fixture(autouse=True)
def unthrottled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Verdicts so far are published as soon as they come (the server waits a second)."""
    monkeypatch.setattr(documents, "PARTIAL_SECONDS", 0.0)


def _so_far(*names: str, mode: str = "fx", unjudged: int = 1,
            classes: int = PARTIAL_CLASSES) -> PartialResult:
    return PartialResult(FileResult(path=PATH, modules=[module(PATH, name, mode)
                                                        for name in names]), unjudged, classes)


def _classes(result: FileResult | None) -> list[tuple[str, str]]:
    assert result is not None
    return [(found.class_name, found.mode) for found in result.modules]


async def test_verdicts_so_far_are_published_then_replaced_by_the_result() -> None:
    fake = FakeServer()
    document = fake.open(PATH)
    await settle()
    [handle] = fake.started(PATH)
    handle.send_partial(_so_far("A", unjudged=2))
    await settle()
    assert _classes(document.result) == [("A", "fx")] and document.unjudged == 2
    assert document.stage_published  # a pull waiting for this text answers with them
    handle.send_partial(_so_far("A", "B", unjudged=1))
    await settle()
    assert _classes(document.result) == [("A", "fx"), ("B", "fx")]
    handle.future.set_result(FileResult(path=PATH, modules=[
        module(PATH, name, "fx") for name in ("A", "B", "C")]))
    await settle()
    assert _classes(document.result) == [("A", "fx"), ("B", "fx"), ("C", "fx")]
    assert document.unjudged == 0
    assert len(fake.accepted_calls) == 3


async def test_verdicts_so_far_of_an_edited_text_are_dropped() -> None:
    fake = FakeServer()
    document = fake.open(PATH)
    await settle()
    [handle] = fake.started(PATH)
    fake.documents.changed(document, 2)
    handle.send_partial(_so_far("A"))
    await settle()
    assert document.result is None and fake.accepted_calls == []


async def test_nothing_is_published_so_far_once_every_class_is_judged() -> None:
    fake = FakeServer()
    document = fake.open(PATH)
    await settle()
    [handle] = fake.started(PATH)
    handle.send_partial(_so_far("A", unjudged=0))  # its result is on its way
    await settle()
    assert document.result is None and fake.accepted_calls == []


async def test_a_job_of_a_few_classes_publishes_only_its_result() -> None:
    fake = FakeServer()
    document = fake.open(PATH)
    await settle()
    [handle] = fake.started(PATH)
    handle.send_partial(_so_far("A", classes=PARTIAL_CLASSES - 1))
    await settle()
    assert document.result is None and fake.accepted_calls == []


async def test_a_later_stage_so_far_is_merged_with_the_earlier_stages() -> None:
    fake = FakeServer()
    fake.stages = [1, 1]
    document = fake.open(PATH)
    await settle()
    [first] = fake.started(PATH)
    first.future.set_result(FileResult(path=PATH, modules=[
        module(PATH, name, "fx") for name in ("A", "B")]))
    await settle()
    [_, second] = fake.started(PATH)
    second.send_partial(_so_far("A", mode="export"))
    await settle()
    assert _classes(document.result) == [("A", "fx"), ("A", "export"), ("B", "fx")]
    assert document.pending_stages == fake.names(1, 0)  # the running stage is still to come


async def test_a_held_phase_publishes_nothing_before_its_result() -> None:
    fake = FakeServer()
    fake.stages = [2]
    fake.held_stages = {0}
    document = fake.open(PATH)
    await settle()
    [_, held] = fake.started(PATH)
    held.send_partial(_so_far("A", mode="compile"))
    await settle()
    assert document.result is None and fake.accepted_calls == []
