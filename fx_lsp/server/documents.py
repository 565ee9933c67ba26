"""The open documents and the scheduling of their traces: which trace runs, which result is
current and which is stale.

A plain class without pygls: the server calls it from its handlers and turns what it accepts
into notifications (``Listener``); tests drive it with a fake engine. Every job gets the texts
of all open buffers as overlays, so unsaved edits are what gets imported. A trace is outdated
as soon as its document changes or a file it imported changes: it is cancelled (its worker
killed) and its result, should it still arrive, dropped.

A trace runs in stages (``fxcore.reporting.mode_phases``): the ``fx`` verdicts are accepted, and
published, before the other capture modes' single-call jobs start, side by side when the engine
runs several children, with compile's loop of calls beside them; each of their results, from
the same texts, is merged with what the trace had published and published in turn, the
loop's verdicts in place of the single call's and never before the single calls' (a held
phase, ``Document.waiting_phases``). What is still to come is named in
``Document.pending_stages``. An edit outdates them all.

A phase of many classes that runs long publishes its verdicts so far as they come
(``partial_publishing``), at most once a ``PARTIAL_SECONDS``; its result replaces them.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from typing import Protocol

from fx_lsp.server.document_state import Document, StartedStage
from fx_lsp.server.partial_publishing import PARTIAL_CLASSES, PARTIAL_SECONDS, verdicts_so_far
from fxcore.api.session import CheckHandle, ParentVerdicts
from fxcore.model.results import FileResult
from fxcore.reporting.mode_phases import merge_phases

logger = logging.getLogger(__name__)


#: Starts stage ``stage`` of tracing ``path`` with the open buffers' texts as overlays: a job
#: per phase of the stage, in phase order; None when the project excludes the file, or when
#: it has no such stage. The last argument is told, on a thread of the engine's, the index of
#: a phase whose children sent new verdicts (``CheckHandle.partial``).
StartTrace = Callable[[str, dict[str, str], int, Callable[[int], None]], StartedStage | None]


class Listener(Protocol):
    """What the server does with the model's decisions."""

    def accepted(self, document: Document, touched: list[Document]) -> None:
        """``document.result`` is new: publish it, and ``touched``, the other open documents
        whose failures it locates (or located)."""

    def excluded(self, document: Document) -> None:
        """The document's project excludes it: it has no verdict."""

    def status(self, message: str = "") -> None:
        """The number of running traces changed, or (``message``) a trace could not run."""


def _on_loop(loop: asyncio.AbstractEventLoop, callback: Callable[..., None],
             *args: object) -> None:
    """``callback(*args)`` on ``loop``, from the thread a job ended in; nothing once the loop
    has closed: the session is over (its jobs are cancelled as the engine closes, after the
    server's loop has stopped), and no one is left to tell."""
    if loop.is_closed():
        return
    try:
        loop.call_soon_threadsafe(callback, *args)
    except RuntimeError:
        if not loop.is_closed():  # closed between the check and the call: the same
            raise


class Documents:
    """The open documents, by path, and their traces."""

    def __init__(
        self,
        start: StartTrace,
        buffer_text: Callable[[Document], str],
        tracing_on: Callable[[], bool],
        listener: Listener,
    ) -> None:
        self._start = start
        self._buffer_text = buffer_text
        self._tracing_on = tracing_on
        self._listener = listener
        self._documents: dict[str, Document] = {}
        #: Latest results whose roots built workspace classes: their derived verdicts serve
        #: the classes of other files.
        self._parent_verdicts = ParentVerdicts()

    # -- the set of documents ----------------------------------------------------------------

    def __iter__(self) -> Iterator[Document]:
        return iter(list(self._documents.values()))

    def __contains__(self, path: str) -> bool:
        return path in self._documents

    def get(self, path: str) -> Document | None:
        return self._documents.get(path)

    def open(self, uri: str, path: str, version: int) -> Document:
        document = Document(uri=uri, path=path, version=version)
        self._documents[path] = document
        self.schedule(document)
        return document

    def close(self, path: str) -> Document | None:
        document = self._documents.pop(path, None)
        if document is not None:
            self.outdate(document)
        return document

    def version_of(self, path: str) -> int | None:
        document = self._documents.get(path)
        return document.version if document is not None else None

    def overlays(self) -> tuple[dict[str, str], dict[str, int]]:
        """The open buffers' texts and versions, by path."""
        texts, versions = {}, {}
        for document in self._documents.values():
            texts[document.path] = self._buffer_text(document)
            versions[document.path] = document.version
        return texts, versions

    @property
    def pending(self) -> int:
        return sum(1 for d in self._documents.values() if d.handles)

    # -- scheduling --------------------------------------------------------------------------

    def outdate(self, document: Document) -> None:
        """The running or planned trace of ``document`` no longer matches: stop it."""
        document.generation += 1
        if document.timer is not None:
            document.timer.cancel()
            document.timer = None
        for handle in document.handles:
            handle.cancel()
        document.handles = []
        document.phase_results = {}
        document.running_names, document.later_names = {}, []
        document.held_phases = set()

    def schedule(self, document: Document, delay: float = 0.0) -> None:
        """Trace ``document`` after ``delay`` seconds (on the running event loop), replacing
        any trace of it that is planned or running."""
        self.outdate(document)
        if not self._tracing_on():
            return
        loop = asyncio.get_running_loop()
        document.timer = loop.call_later(delay, self._submit, document, document.generation)

    def dependents(self, path: str) -> list[Document]:
        """Open documents whose last trace imported ``path`` (or whose first one still runs)."""
        return [
            d
            for d in self._documents.values()
            if d.path != path
            and (
                (d.result is not None and path in d.result.imported_files)
                or (d.result is None and bool(d.handles))
            )
        ]

    def changed(self, document: Document, version: int) -> None:
        """The buffer was edited: its trace and its result are of an older text."""
        document.version = version
        self.outdate(document)

    def trace_with_dependents(self, document: Document, delay: float = 0.0) -> None:
        self.schedule(document, delay)
        for dependent in self.dependents(document.path):
            self.schedule(dependent, delay)

    def file_changed(self, path: str) -> None:
        """``path``, not open here, changed on disk: retrace the documents that imported it."""
        for dependent in self.dependents(path):
            self.schedule(dependent)

    def retrace_all(self) -> None:
        for document in self._documents.values():
            self.schedule(document)

    def stop_all(self) -> None:
        """Outdate every trace and forget every result (tracing was switched off)."""
        for document in self._documents.values():
            self.outdate(document)
            document.result = None

    def _submit(self, document: Document, generation: int) -> None:
        document.timer = None
        if self._documents.get(document.path) is not document or (
            generation != document.generation
        ):
            return
        texts, versions = self.overlays()
        self._start_stage(document, generation, 0, texts, versions)

    def _start_stage(
        self, document: Document, generation: int, stage: int, texts: dict[str, str],
        versions: dict[str, int],
    ) -> None:
        """Start stage ``stage`` of the trace of ``document`` from the buffers' ``texts``."""
        loop = asyncio.get_running_loop()
        version = document.version
        #: The stage's handles by phase, once started: what a phase's new verdicts are of.
        phase_handles: list[CheckHandle] = []

        def ready(phase: int) -> None:  # on a thread of the engine's
            _on_loop(loop, self._partial, document, generation, version, versions,
                     (stage, phase), phase_handles)

        try:
            started = self._start(document.path, texts, stage, ready)
            handles = started.handles if started is not None else []
            if not handles:
                if stage == 0:
                    # Excluded by its project's `exclude`: as in `fx-lsp check`, no verdict.
                    document.result = None
                    self._listener.excluded(document)
                self._listener.status()
                return
            document.handles = list(handles)
            phase_handles.extend(handles)
            document.partial_after = loop.time() + PARTIAL_SECONDS
            assert started is not None
            document.running_names = {(stage, phase): names
                                      for phase, names in enumerate(started.names)}
            document.later_names = list(started.later)
            document.held_phases = {(stage, phase) for phase, held in enumerate(started.held)
                                    if held}
            for phase, handle in enumerate(handles):
                handle.future.add_done_callback(
                    lambda future, phase=phase, handle=handle: _on_loop(
                        loop, self._finished, document, generation, version, texts, versions,
                        (stage, phase), handle, future,
                    )
                )
            self._listener.status()
        except Exception as error:
            logger.exception("fx-lsp: cannot start a trace of %s", document.path)
            self._listener.status(f"cannot trace {os.path.basename(document.path)}: {error}")

    def _finished(
        self,
        document: Document,
        generation: int,
        version: int,
        texts: dict[str, str],
        versions: dict[str, int],
        phase: tuple[int, int],
        handle: CheckHandle,
        future: Future[FileResult],
    ) -> None:
        if handle in document.handles:
            document.handles.remove(handle)
        names = document.running_names.pop(phase, None)
        current = (
            self._documents.get(document.path) is document
            and document.generation == generation
            and document.version == version
        )
        if future.cancelled() or not current:
            self._listener.status()
            return
        error = future.exception()
        if error is not None:
            if not document.handles:
                document.later_names = []  # no later stage starts
            self._listener.status(f"tracing {os.path.basename(document.path)} failed: {error}")
        else:
            document.phase_results[phase] = future.result()
        # Held phases (the loop's findings) come after the other phases of their stage:
        # pending until those are published, then published apart, last.
        waiting = document.waiting_phases
        released = {key for key in document.held_phases & document.phase_results.keys()
                    if key in document.running_names} - waiting
        if phase in waiting:
            document.running_names[phase] = names or []
            self._listener.status()
        elif error is None:
            self._publish(document, generation, version, versions, waiting | released)
        if phase not in waiting and released:
            for key in released:
                del document.running_names[key]
            self._publish(document, generation, version, versions, waiting)
        if phase not in waiting and (error is None or released) and not document.handles:
            # The next stage traces the same texts: its results merge with these.
            self._start_stage(document, generation, phase[0] + 1, texts, versions)
        elif phase not in waiting and error is None:
            self._listener.status()  # a pull waiting for a stage of this trace answers

    def _publish(self, document: Document, generation: int, version: int,
                 versions: dict[str, int], left_out: set[tuple[int, int]]) -> None:
        """Accept and publish what the trace's phases found so far but ``left_out``, merged
        in phase order whichever finished first."""
        finished = [result for key, result in sorted(document.phase_results.items())
                    if key not in left_out]
        if not finished:
            return
        result = functools.reduce(merge_phases, finished)
        document.unjudged = 0
        self._tell(document, self.with_parent_verdicts(result), generation, version, versions)

    def _partial(self, document: Document, generation: int, version: int,
                 versions: dict[str, int], phase: tuple[int, int],
                 phase_handles: list[CheckHandle]) -> None:
        """A running phase's children sent new verdicts: publish them, the classes still to
        judge in ``Document.unjudged``; at most once a ``PARTIAL_SECONDS``, the first that long
        into its stage, never for an outdated trace or a held phase (published after)."""
        handle = phase_handles[phase[1]]
        if handle not in document.handles or phase in document.held_phases or not (
                self._documents.get(document.path) is document
                and document.generation == generation and document.version == version):
            return
        loop = asyncio.get_running_loop()
        wait = document.partial_after - loop.time()
        if wait > 0:
            loop.call_later(wait, self._partial, document, generation, version, versions, phase,
                            phase_handles)
            return
        partial = handle.partial()
        if partial is None or not partial.unjudged or partial.classes < PARTIAL_CLASSES:
            return  # every class judged (its result is near), or a few classes' job
        document.partial_after = loop.time() + PARTIAL_SECONDS
        document.unjudged = partial.unjudged
        result = verdicts_so_far(document, phase, partial, self._parent_verdicts)
        self._tell(document, result, generation, version, versions)

    def _tell(self, document: Document, result: FileResult, generation: int, version: int,
              versions: dict[str, int]) -> None:
        """Accept ``result`` for the trace ``generation`` and tell the listener."""
        previous = document.result
        self._accept(document, result, version, versions)
        document.accepted_generation = generation
        # Failures this trace located in other open files (or no longer does) show there.
        touched = {
            f.path for r in (previous, document.result) if r for m in r.modules for f in m.failures
        }
        others = [d for d in self._documents.values() if d is not document and d.path in touched]
        try:
            self._listener.accepted(document, others)
        except Exception:
            logger.exception("fx-lsp: cannot publish the trace of %s", document.path)

    def _accept(
        self, document: Document, result: FileResult, version: int, versions: dict[str, int]
    ) -> None:
        document.result = result
        document.result_version = version
        document.overlay_versions = versions

    # -- results -----------------------------------------------------------------------------

    def with_parent_verdicts(self, result: FileResult) -> FileResult:
        """The result with the verdicts of instances that traced roots built (remembering
        this result's own derived verdicts for other files)."""
        return self._parent_verdicts.apply(result)

    def adopt(self, document: Document, result: FileResult, versions: dict[str, int]) -> bool:
        """A workspace trace's result for an open document, traced with the open buffers at
        ``versions``: adopted (True) if the document's text is unchanged since; else dropped,
        since its lines no longer match, and the document traced again."""
        result = self.with_parent_verdicts(result)
        if document.busy:
            return False  # a trace of the current text is on its way
        if versions.get(document.path) != document.version:
            self.schedule(document)
            return False
        self._accept(document, result, document.version, versions)
        return True

    def is_current(self, document: Document) -> bool:
        """Its result (or, without one, its nothing) is of its buffer's current text: one of
        an older text has lines that have moved, and a trace of this text publishes anew."""
        own = document.result_version if document.result is not None else document.version
        return own == document.version

    def results_traced_with(self, document: Document) -> list[FileResult]:
        """Other documents' results traced with this document's current text: their failures
        located in it are on its current lines."""
        return [
            d.result
            for d in self._documents.values()
            if d is not document
            and d.result is not None
            and d.overlay_versions.get(document.path) == document.version
        ]

    def other_results(self, document: Document) -> list[FileResult]:
        return [
            d.result for d in self._documents.values() if d is not document and d.result is not None
        ]
