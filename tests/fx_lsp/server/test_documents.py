"""The document model (fx_lsp.server.documents) driven by a fake engine: which trace runs, which
result is accepted, which is dropped as stale, and who is traced again."""

from __future__ import annotations

from document_fakes import FakeServer, module, result, settle

from fxcore.model.results import FileResult, ModuleResult


async def test_opening_traces_with_every_open_buffer_as_overlay() -> None:
    fake = FakeServer()
    fake.open("/project/b.py", "B = 1\n")
    fake.open("/project/a.py", "import b\n")
    await settle()
    [handle] = fake.started("/project/a.py")
    assert handle.job.overlays == {"/project/b.py": "B = 1\n", "/project/a.py": "import b\n"}
    handle.future.set_result(result("/project/a.py"))
    await settle()
    document = fake.documents.get("/project/a.py")
    assert document is not None and document.result is not None
    assert document.result_version == 1 and not document.handles
    assert document.overlay_versions == {"/project/b.py": 1, "/project/a.py": 1}
    assert ("/project/a.py", []) in fake.accepted_calls


async def test_a_result_for_an_edited_text_is_dropped_and_its_trace_cancelled() -> None:
    fake = FakeServer()
    document = fake.open("/project/a.py")
    await settle()
    [first] = fake.started("/project/a.py")
    fake.documents.changed(document, 2)
    assert first.cancelled
    first.future.set_result(result("/project/a.py"))  # the worker finished anyway
    await settle()
    assert document.result is None
    assert fake.accepted_calls == []
    assert fake.documents.is_current(document)  # no result: nothing stale to show


async def test_only_the_latest_of_two_traces_is_accepted() -> None:
    fake = FakeServer()
    document = fake.open("/project/a.py")
    await settle()
    fake.documents.schedule(document)  # saved again while the first trace runs
    await settle()
    first, second = fake.started("/project/a.py")
    assert first.cancelled and not second.cancelled
    second.future.set_result(result("/project/a.py", imported=["/project/new.py"]))
    first.future.set_result(result("/project/a.py", imported=["/project/old.py"]))
    await settle()
    assert document.result is not None
    assert "/project/new.py" in document.result.imported_files
    assert len(fake.accepted_calls) == 1


async def test_a_planned_trace_that_is_outdated_never_starts() -> None:
    fake = FakeServer()
    document = fake.open("/project/a.py")
    fake.documents.schedule(document, delay=60.0)
    fake.documents.outdate(document)
    await settle()
    assert fake.handles == [] and document.timer is None


async def test_documents_that_imported_a_changed_file_are_traced_again() -> None:
    fake = FakeServer()
    model = fake.open("/project/model.py")
    user = fake.open("/project/train.py")
    other = fake.open("/project/other.py")
    await settle()
    fake.started("/project/model.py")[0].future.set_result(result("/project/model.py"))
    fake.started("/project/train.py")[0].future.set_result(
        result("/project/train.py", imported=["/project/model.py", "/project/util.py"])
    )
    fake.started("/project/other.py")[0].future.set_result(result("/project/other.py"))
    await settle()
    assert fake.documents.dependents("/project/model.py") == [user]

    fake.documents.trace_with_dependents(model)  # model.py saved
    await settle()
    assert len(fake.started("/project/model.py")) == 2
    assert len(fake.started("/project/train.py")) == 2
    fake.documents.file_changed("/project/util.py")  # util.py, not open, changed on disk
    await settle()
    assert len(fake.started("/project/train.py")) == 3
    assert len(fake.started("/project/other.py")) == 1
    assert not other.handles


async def test_an_excluded_file_gets_no_verdict() -> None:
    fake = FakeServer()
    fake.excluded_paths.add("/project/skip.py")
    document = fake.open("/project/skip.py")
    await settle()
    assert fake.excluded_calls == ["/project/skip.py"]
    assert document.result is None and fake.handles == []


async def test_failures_located_in_another_open_file_publish_there() -> None:
    fake = FakeServer()
    fake.open("/project/layers.py")
    fake.open("/project/net.py")
    await settle()
    fake.started("/project/net.py")[0].future.set_result(
        result("/project/net.py", failures_in=["/project/layers.py"])
    )
    await settle()
    assert ("/project/net.py", ["/project/layers.py"]) in fake.accepted_calls
    layers = fake.documents.get("/project/layers.py")
    assert layers is not None
    assert fake.documents.results_traced_with(layers)[0].path == "/project/net.py"
    fake.documents.changed(layers, 2)
    assert fake.documents.results_traced_with(layers) == []


async def test_a_workspace_result_is_adopted_only_for_the_text_it_traced() -> None:
    fake = FakeServer()
    document = fake.open("/project/a.py")
    await settle()
    assert not fake.documents.adopt(document, result("/project/a.py"), {"/project/a.py": 1})
    fake.started("/project/a.py")[0].future.set_result(result("/project/a.py"))
    await settle()

    assert fake.documents.adopt(document, result("/project/a.py"), {"/project/a.py": 1})
    fake.documents.changed(document, 2)
    assert not fake.documents.adopt(document, result("/project/a.py"), {"/project/a.py": 1})
    assert not fake.documents.is_current(document)
    await settle()
    assert len(fake.started("/project/a.py")) == 2  # traced again for the new text


async def test_nothing_is_traced_while_untrusted_and_stop_all_forgets_results() -> None:
    fake = FakeServer()
    document = fake.open("/project/a.py")
    await settle()
    fake.started("/project/a.py")[0].future.set_result(result("/project/a.py"))
    await settle()
    fake.trusted = False
    fake.documents.stop_all()
    fake.documents.retrace_all()
    await settle()
    assert document.result is None and len(fake.handles) == 1


async def test_a_failed_start_is_reported_not_raised() -> None:
    fake = FakeServer()

    def broken(path: str, overlays: dict[str, str], phase: int, ready: object) -> None:
        raise OSError("no worker")

    fake.documents._start = broken
    fake.open("/project/a.py")
    await settle()
    assert fake.messages == ["cannot trace a.py: no worker"]


async def test_closing_a_document_cancels_its_trace_and_drops_its_result() -> None:
    fake = FakeServer()
    fake.open("/project/a.py")
    await settle()
    [handle] = fake.started("/project/a.py")
    closed = fake.documents.close("/project/a.py")
    assert closed is not None and handle.cancelled
    handle.future.set_result(result("/project/a.py"))
    await settle()
    assert fake.accepted_calls == [] and "/project/a.py" not in fake.documents


async def test_the_later_stage_starts_after_the_first_is_published_and_merges_with_it() -> None:
    fake = FakeServer()
    fake.stages = [1, 1]
    document = fake.open("/project/a.py", "class Net: ...\n")
    await settle()
    [first] = fake.started("/project/a.py")
    assert first.stage == 0
    first.future.set_result(FileResult(path="/project/a.py",
                                       modules=[module("/project/a.py", "Net", "fx")]))
    await settle()
    # fx is published before the later stage runs, which traces the same texts.
    assert len(fake.accepted_calls) == 1
    assert document.result is not None and [m.mode for m in document.result.modules] == ["fx"]
    [_, later] = fake.started("/project/a.py")
    assert later.stage == 1 and later.job.overlays == first.job.overlays and document.busy
    later.future.set_result(FileResult(path="/project/a.py",
                                       modules=[module("/project/a.py", "Net", "export")]))
    await settle()
    assert len(fake.accepted_calls) == 2 and not document.busy
    assert [m.mode for m in document.result.modules] == ["fx", "export"]
    assert len(fake.handles) == 2  # no third stage


async def test_side_by_side_phases_publish_each_as_it_ends_in_phase_order() -> None:
    fake = FakeServer()
    fake.stages = [1, 2]
    document = fake.open("/project/a.py", "class Net: ...\n")
    await settle()
    [first] = fake.started("/project/a.py")
    first.future.set_result(FileResult(path="/project/a.py",
                                       modules=[module("/project/a.py", "Net", "fx")]))
    await settle()
    [_, export, compile_] = fake.started("/project/a.py")
    assert (export.stage, export.phase, compile_.stage, compile_.phase) == (1, 0, 1, 1)
    assert export.job.overlays == compile_.job.overlays == first.job.overlays
    # The second phase ends first: published with fx, then the first fills in before it.
    compile_.future.set_result(FileResult(path="/project/a.py",
                                          modules=[module("/project/a.py", "Net", "compile")]))
    await settle()
    assert document.result is not None and document.busy
    assert [m.mode for m in document.result.modules] == ["fx", "compile"]
    export.future.set_result(FileResult(path="/project/a.py",
                                        modules=[module("/project/a.py", "Net", "export")]))
    await settle()
    assert [m.mode for m in document.result.modules] == ["fx", "export", "compile"]
    assert len(fake.accepted_calls) == 3 and not document.busy and len(fake.handles) == 3


async def test_an_edit_during_the_later_stage_drops_its_results() -> None:
    fake = FakeServer()
    fake.stages = [1, 2]
    document = fake.open("/project/a.py")
    await settle()
    fake.started("/project/a.py")[0].future.set_result(
        FileResult(path="/project/a.py", modules=[module("/project/a.py", "Net", "fx")]))
    await settle()
    later = fake.started("/project/a.py")[1:]
    fake.documents.changed(document, 2)
    assert all(handle.cancelled for handle in later) and not document.busy
    for handle, mode in zip(later, ("export", "compile"), strict=True):  # finished anyway
        handle.future.set_result(
            FileResult(path="/project/a.py", modules=[module("/project/a.py", "Net", mode)]))
    await settle()
    assert len(fake.accepted_calls) == 1
    assert not fake.documents.is_current(document)  # the fx result is of version 1


async def test_the_loop_stage_replaces_the_single_calls_verdict_and_pending_stages_shrink(
) -> None:
    """fx, then export and compile's single call, then compile with its loop of calls: each
    stage is published with the earlier ones, compile's loop verdict in place of its single
    call's, and the document names the stages still to come at each publish."""
    fake = FakeServer()
    fake.stages = [1, 1, 1]
    pending: list[list[str]] = []
    fake.accepted = lambda document, touched: pending.append(document.pending_stages)
    document = fake.open("/project/a.py", "class Net: ...\n")
    await settle()
    assert document.pending_stages == ["stage 0 phase 0", "stage 1 phase 0", "stage 2 phase 0"]
    assert not document.stage_published
    [first] = fake.started("/project/a.py")
    first.future.set_result(FileResult(path="/project/a.py",
                                       modules=[module("/project/a.py", "Net", "fx")]))
    await settle()
    assert document.stage_published
    [_, single] = fake.started("/project/a.py")
    single_call = module("/project/a.py", "Net", "compile")
    single.future.set_result(FileResult(path="/project/a.py", modules=[
        module("/project/a.py", "Net", "export"), single_call]))
    await settle()
    [_, _, looped] = fake.started("/project/a.py")
    assert looped.stage == 2 and looped.job.overlays == first.job.overlays
    loop_verdict = module("/project/a.py", "Net", "compile")
    loop_verdict.status = "failed"
    looped.future.set_result(FileResult(path="/project/a.py", modules=[loop_verdict]))
    await settle()
    assert pending == [["stage 1 phase 0", "stage 2 phase 0"], ["stage 2 phase 0"], []]
    assert document.result is not None and not document.busy
    assert [m.mode for m in document.result.modules] == ["fx", "export", "compile"]
    assert document.result.modules[2] is loop_verdict


async def test_an_edit_forgets_the_pending_stages_of_the_old_text() -> None:
    fake = FakeServer()
    fake.stages = [1, 1, 1]
    document = fake.open("/project/a.py")
    await settle()
    fake.started("/project/a.py")[0].future.set_result(
        FileResult(path="/project/a.py", modules=[module("/project/a.py", "Net", "fx")]))
    await settle()
    assert document.pending_stages == ["stage 1 phase 0", "stage 2 phase 0"]
    fake.documents.changed(document, 2)
    assert document.pending_stages == [] and not document.stage_published


def _staged_with_loop_beside(fake: FakeServer) -> list[list[str]]:
    """fx, then the single calls with the loop beside them (held): the pending stages at
    each publish."""
    fake.stages, fake.held_stages = [1, 2], {1}
    pending: list[list[str]] = []
    fake.accepted = lambda document, touched: pending.append(document.pending_stages)
    return pending


def _loop_verdict() -> ModuleResult:
    verdict = module("/project/a.py", "Net", "compile")
    verdict.status = "failed"
    return verdict


async def test_a_loop_that_ends_first_waits_for_the_single_calls_then_publishes_apart() -> None:
    fake = FakeServer()
    pending = _staged_with_loop_beside(fake)
    document = fake.open("/project/a.py", "class Net: ...\n")
    await settle()
    fake.started("/project/a.py")[0].future.set_result(
        FileResult(path="/project/a.py", modules=[module("/project/a.py", "Net", "fx")]))
    await settle()
    # The loop starts with the single calls, beside them.
    [_, single, looped] = fake.started("/project/a.py")
    assert (single.stage, looped.stage) == (1, 1)
    loop_verdict = _loop_verdict()
    looped.future.set_result(FileResult(path="/project/a.py", modules=[loop_verdict]))
    await settle()
    # Ended first, held: nothing published, still pending.
    assert pending == [["stage 1 phase 0", "stage 1 phase 1"]] and document.busy
    assert document.pending_stages == ["stage 1 phase 0", "stage 1 phase 1"]
    single.future.set_result(FileResult(path="/project/a.py", modules=[
        module("/project/a.py", "Net", "export"), module("/project/a.py", "Net", "compile")]))
    await settle()
    # The single calls published on their own, then the loop's findings in their place.
    assert pending[1:] == [["stage 1 phase 1"], []] and not document.busy
    assert document.result is not None
    assert [m.mode for m in document.result.modules] == ["fx", "export", "compile"]
    assert document.result.modules[2] is loop_verdict


async def test_a_loop_that_ends_last_is_published_after_the_single_calls() -> None:
    fake = FakeServer()
    pending = _staged_with_loop_beside(fake)
    document = fake.open("/project/a.py", "class Net: ...\n")
    await settle()
    fake.started("/project/a.py")[0].future.set_result(
        FileResult(path="/project/a.py", modules=[module("/project/a.py", "Net", "fx")]))
    await settle()
    [_, single, looped] = fake.started("/project/a.py")
    single.future.set_result(FileResult(path="/project/a.py", modules=[
        module("/project/a.py", "Net", "compile")]))
    await settle()
    assert pending[-1] == ["stage 1 phase 1"] and document.busy
    looped.future.set_result(FileResult(path="/project/a.py", modules=[_loop_verdict()]))
    await settle()
    assert pending[-1] == [] and len(fake.handles) == 3
    assert document.result is not None and document.result.modules[1].status == "failed"


async def test_a_held_loop_is_published_when_the_single_calls_fail() -> None:
    fake = FakeServer()
    pending = _staged_with_loop_beside(fake)
    document = fake.open("/project/a.py", "class Net: ...\n")
    await settle()
    fake.started("/project/a.py")[0].future.set_result(
        FileResult(path="/project/a.py", modules=[module("/project/a.py", "Net", "fx")]))
    await settle()
    [_, single, looped] = fake.started("/project/a.py")
    looped.future.set_result(FileResult(path="/project/a.py", modules=[_loop_verdict()]))
    await settle()
    single.future.set_exception(RuntimeError("worker lost"))
    await settle()
    assert pending[-1] == [] and not document.busy
    assert document.result is not None
    assert [m.mode for m in document.result.modules] == ["fx", "compile"]
    assert any("worker lost" in message for message in fake.messages)
