"""A fake engine and listener for the document model (``fx_lsp.server.documents``): the test
decides when each trace's phases end and with what."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import Future

from fx_lsp.server.documents import Document, Documents, StartedStage
from fxcore.model.job_spec import TraceJob
from fxcore.model.partial_result import PartialResult
from fxcore.model.results import Failure, FileResult, ModuleResult


class FakeHandle:
    """A submitted trace whose result the test decides; ``cancel`` is only recorded, so a
    result can still arrive after it, as one from a worker that finished first does."""

    def __init__(self, path: str, overlays: dict[str, str], stage: int = 0,
                 phase: int = 0, ready: Callable[[int], None] = lambda phase: None) -> None:
        self.job = TraceJob(path=path, workspace_root="/project", overlays=overlays)
        self.stage = stage
        self.phase = phase
        self.future: Future[FileResult] = Future()
        self.cancelled = False
        self._ready = ready
        #: The verdicts so far the test last sent (``send_partial``).
        self.verdicts_so_far: PartialResult | None = None

    def cancel(self) -> None:
        self.cancelled = True

    def send_partial(self, partial: PartialResult) -> None:
        """The job's children sent the verdicts ``partial``: the documents are told, as from
        the engine's thread."""
        self.verdicts_so_far = partial
        self._ready(self.phase)

    def partial(self) -> PartialResult | None:
        return self.verdicts_so_far


class FakeServer:
    """The engine and the listener: records every trace started and every decision."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}
        self.trusted = True
        self.excluded_paths: set[str] = set()
        #: How many phases each stage of a trace has ([1, 1]: fx, then the other capture
        #: modes in one job; [1, 2]: export and compile side by side).
        self.stages = [1]
        #: The stages whose last phase is held (compile's loop of calls beside the single
        #: calls, ``mode_phases.Phase.held``).
        self.held_stages: set[int] = set()
        self.handles: list[FakeHandle] = []
        self.accepted_calls: list[tuple[str, list[str]]] = []
        self.excluded_calls: list[str] = []
        self.messages: list[str] = []
        self.documents = Documents(
            self.start, lambda document: self.texts[document.path], lambda: self.trusted, self
        )

    @staticmethod
    def names(stage: int, phase: int) -> list[str]:
        """What the fake calls a phase (the engine: its modes, ``mode_phases.phase_names``)."""
        return [f"stage {stage} phase {phase}"]

    def start(self, path: str, overlays: dict[str, str], stage: int,
              ready: Callable[[int], None]) -> StartedStage | None:
        if path in self.excluded_paths or stage >= len(self.stages):
            return None
        handles = [FakeHandle(path, overlays, stage, phase, ready)
                   for phase in range(self.stages[stage])]
        self.handles.extend(handles)
        return StartedStage(handles, [self.names(stage, phase) for phase in range(len(handles))],
                            [name for later, phases in enumerate(self.stages[stage + 1:], stage + 1)
                             for phase in range(phases) for name in self.names(later, phase)],
                            [stage in self.held_stages and phase == len(handles) - 1
                             for phase in range(len(handles))])

    def accepted(self, document: Document, touched: list[Document]) -> None:
        self.accepted_calls.append((document.path, [d.path for d in touched]))

    def excluded(self, document: Document) -> None:
        self.excluded_calls.append(document.path)

    def status(self, message: str = "") -> None:
        if message:
            self.messages.append(message)

    def open(self, path: str, text: str = "", version: int = 1) -> Document:
        self.texts[path] = text
        return self.documents.open(f"file://{path}", path, version)

    def started(self, path: str) -> list[FakeHandle]:
        return [h for h in self.handles if h.job.path == path]


def result(path: str, imported: list[str] = (), failures_in: list[str] = ()) -> FileResult:
    modules = []
    if failures_in:
        module = ModuleResult(path=path, class_name="Net", qualified_name="m:Net", line=1,
                              column=1, end_line=1, end_column=4, status="failed")
        module.failures = [Failure(code="FX001", kind="control-flow", message="", path=where,
                                   line=2, column=1, end_line=2, end_column=3)
                           for where in failures_in]
        modules.append(module)
    return FileResult(path=path, modules=modules, imported_files=[path, *imported])


async def settle() -> None:
    """Let the timers at delay 0 and the done-callbacks run."""
    for _ in range(5):
        await asyncio.sleep(0)


def module(path: str, class_name: str, mode: str) -> ModuleResult:
    return ModuleResult(path=path, class_name=class_name, qualified_name=f"m:{class_name}",
                        line=1, column=1, end_line=1, end_column=4, status="traceable",
                        mode=mode)
