"""The pygls 2 language server: handlers, each a few calls, over fxcore's trace results.

Which trace runs and which result is current is decided by ``fx_lsp.documents``; settings are
merged by ``fx_lsp.settings``; the workspace trace is ``fx_lsp.workspace_trace``; results become
LSP types in ``diagnostics``, ``hover``, ``code_actions``, ``code_lens`` and ``inlay_hints``,
each given a ``fx_lsp.snapshot.DocumentSnapshot`` of the document a request is about. Requests
answer from the latest accepted results and never wait for a trace.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lsprotocol import types

from fx_lsp import (
    notebooks,
)
from fx_lsp.baseline_hints import BaselineFiles
from fx_lsp.documents import Document, Documents
from fx_lsp.parse_process import ParseProcess
from fx_lsp.protocol import (
    TRACED,
    FxProtocol,
    guarded,
)
from fx_lsp.publishing import Publishing
from fx_lsp.settings import Settings
from fx_lsp.snapshot import Files
from fxcore.checking.pipeline import CheckHandle, Pipeline, jobs_below
from fxcore.host import network_isolation
from fxcore.host.cache import ResultCache
from fxcore.host.engine import Engine
from fxcore.host.torch_versions import installed_torch_support
from fxcore.model.job_spec import TraceJob
from fxcore.model.results import CODES, FileResult
from fxcore.model.version import VERSION
from fxcore.reporting.mode_phases import stage_jobs
from fxcore.workspace.paths import trace_jobs

UNTRUSTED_MESSAGE = (
    "fx-lsp: tracing is off until the workspace is trusted (no code from it is imported or run)."
)

logger = logging.getLogger(__name__)


class FxLanguageServer(Publishing):
    protocol: FxProtocol

    def __init__(self) -> None:
        super().__init__(
            "fx-lsp",
            VERSION,
            protocol_cls=FxProtocol,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
            # Declared to clients that support notebooks only (pygls checks their capabilities).
            notebook_document_sync=notebooks.SYNC_OPTIONS,
        )
        self.engine: Engine | None = None
        #: Jobs' way through the engine (``fxcore.checking.pipeline``), with the cache and the
        #: call-site index: made with the engine, closed with it.
        self.pipeline: Pipeline | None = None
        #: The installed torch, judged once: a refused one means no worker ever starts.
        self.torch = installed_torch_support()
        self.settings = Settings(self._open_text, self.root_of, self._warn)
        #: The open notebooks' modules, by the notebook's path (``fx_lsp.notebooks``): each is
        #: one of ``documents``, whose text is the module's.
        self.notebooks: dict[str, notebooks.NotebookModule] = {}
        self.documents = Documents(
            self._start_trace,
            self.overlay_text,
            self.tracing_on,
            self,
        )
        self._reported: set[str] = set()
        #: Jobs of a running workspace trace (``fx_lsp.workspace_trace``).
        self.workspace_handles: set[CheckHandle] = set()
        self._status: tuple[str, int, str] | None = None
        self.baselines = BaselineFiles()
        self._disk_lines: dict[str, tuple[float, list[str]]] = {}
        self.watcher: asyncio.Future[None] | None = None
        #: The client sends didChangeWatchedFiles for the workspace's files (we registered).
        self.watches_files = False
        #: Tasks nothing else holds on to (asyncio keeps only weak references).
        self._tasks: set[asyncio.Future[None]] = set()
        #: Quick-fix planning and edits parse whole files (seconds on a 20,000-line file): the
        #: parses run in a process of their own, which holds no GIL of ours; the requests wait
        #: for it in one thread, so that they pile up there rather than on the event loop.
        self.fix_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fx-lsp-fixes")
        self.parse_process = ParseProcess()
        self.files = Files(self.text_of, self.lines_of, self.documents.version_of, self.root_of,
                           self.parse_process.run, self.cell_words)

    # -- messages -------------------------------------------------------------------------------

    def report_once(self, messages: list[str], kind: types.MessageType) -> None:
        for message in messages:
            if message not in self._reported:
                self._reported.add(message)
                self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def _warn(self, problems: list[str], where: str) -> None:
        """One read's configuration problems: each new one in the log, and one pop-up, the
        problem itself or, for several, how many (2,000 unknown keys made 2,000 pop-ups)."""
        new = [problem for problem in dict.fromkeys(problems) if problem not in self._reported]
        if not new:
            return
        self._reported.update(new)
        for problem in new:
            self.window_log_message(
                types.LogMessageParams(type=types.MessageType.Warning, message=problem))
        message = new[0] if len(new) == 1 else (
            f"fx-lsp: {len(new):,} problems in {where}, each in the fx-lsp log (VS Code: the "
            f"FX Trace output); the first: {new[0]}")
        self.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Warning, message=message))

    def tracing_on(self) -> bool:
        """Whether documents are traced: the workspace is trusted and torch is supported."""
        return self.settings.options.trusted and self.torch.refusal is None

    def report_torch(self) -> None:
        """A refused torch: one error pop-up (no diagnostics follow); an untested one: a line
        in the log."""
        if self.torch.refusal is not None:
            self.report_once([self.torch.refusal], types.MessageType.Error)
        elif self.torch.untested is not None:
            self.window_log_message(types.LogMessageParams(
                type=types.MessageType.Warning, message=self.torch.untested))

    def report_untrusted(self) -> None:
        self.report_once([UNTRUSTED_MESSAGE], types.MessageType.Info)

    def log_worker_output(self, result: FileResult) -> None:
        """A worker that timed out or crashed: what it printed goes to the server's log (VS
        Code: the fx-lsp output channel), the clue most often needed to tell why."""
        ended = any(
            f.code == CODES["timeout"]
            for f in (*result.errors, *(f for m in result.modules for f in m.failures))
        )
        if ended and result.output.strip():
            self.window_log_message(
                types.LogMessageParams(
                    type=types.MessageType.Log,
                    message=f"fx-lsp: the worker for {result.path} timed out or crashed; "
                    f"what it printed (last {len(result.output)} characters):\n"
                    + result.output.rstrip(),
                )
            )

    async def log_network_isolation(self) -> None:
        """Say in the log which network isolation workers get here (the probe starts a
        throwaway process: waited for in a thread, off the event loop)."""
        description = await asyncio.to_thread(network_isolation.describe)
        self.window_log_message(
            types.LogMessageParams(type=types.MessageType.Info,
                                   message=f"fx-lsp: network isolation: {description}")
        )

    async def off_loop(self, function: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(
            self.fix_executor, functools.partial(function, *args)
        )

    # -- the engine -----------------------------------------------------------------------------

    def ensure_pipeline(self) -> Pipeline:
        if self.pipeline is None:
            self.engine = Engine()
            # Unchanged files (and their imports) are answered from .fx-lsp-cache/.
            self.pipeline = Pipeline(self.engine, ResultCache())
            # Starting the worker imports torch (over a second): not on the event loop.
            threading.Thread(target=self.engine.warm_up, daemon=True).start()
        return self.pipeline

    def close_engine(self, wait: bool = True) -> None:
        """Kill the workers. ``wait=False`` closes in a thread, for callers on the event loop:
        closing can take seconds (a job waits for its worker's pipes), and the worker process
        exits by itself when this process does."""
        engine, self.engine = self.engine, None
        pipeline, self.pipeline = self.pipeline, None
        if engine is None and pipeline is None:
            return

        def close() -> None:
            # The engine first: a job that waits for its zygote to start stops at once.
            if engine is not None:
                engine.close()
            if pipeline is not None:
                pipeline.close()

        if wait:
            close()
        else:
            threading.Thread(target=close, name="fx-lsp-close", daemon=True).start()

    def _start_trace(self, path: str, overlays: dict[str, str],
                     stage: int) -> list[CheckHandle] | None:
        jobs = trace_jobs([path], self.root_of, self.settings.engine_config, overlays)
        if not jobs:
            return None
        pipeline = self.ensure_pipeline()
        # The later stage's modes run side by side when the engine has workers and CPUs for it.
        phases = stage_jobs(jobs[0], stage, side_by_side=pipeline.engine.side_by_side)
        if not phases:
            return None
        if not self.watches_files:
            # No file events tell the call-site index what changed on disk: the job looks.
            pipeline.call_sites.rescan_before_next_use()
        return [pipeline.submit(job) for job in phases]

    def files_changed(self, paths: list[str]) -> None:
        """Files changed on disk: bring the call-site index up to date (in a thread: it reads
        them, and waits while a job builds the index), then retrace the open documents with a
        class whose constructor calls changed."""
        pipeline = self.pipeline
        if pipeline is None or not paths:
            return

        @guarded()
        async def update() -> None:
            changed = await asyncio.to_thread(pipeline.call_sites.changed, paths)
            for document in self.documents:
                names = changed.get(os.path.abspath(self.root_of(document.path)), set())
                if document.result is not None and any(
                    module.class_name in names for module in document.result.modules
                ):
                    self.documents.schedule(document)

        task = asyncio.ensure_future(update())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def set_trusted(self, trusted: bool) -> None:
        if trusted:
            if self.tracing_on():
                self.ensure_pipeline()
            self.documents.retrace_all()
        else:
            self.documents.stop_all()
            for document in self.documents:
                self.clear(document.uri)
            # Not on the event loop: closing waits for the workers, which can take seconds.
            self.close_engine(wait=False)
            self.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Info, message=UNTRUSTED_MESSAGE)
            )
        self.send_status()

    # -- the workspace trace (fx_lsp.workspace_trace.Host) -------------------------------------

    def workspace_jobs(self) -> tuple[list[TraceJob], dict[str, int]]:
        texts, versions = self.documents.overlays()
        jobs = jobs_below(self.workspace_folders() or [], self.root_of,
                          self.settings.engine_config, texts, self.client_has_notebooks())
        return jobs, versions

    def submit_workspace(self, jobs: list[TraceJob]) -> list[CheckHandle] | None:
        if not self.settings.options.trusted:
            self.report_untrusted()
            return None
        if not self.tracing_on():
            self.report_torch()
            return None
        pipeline = self.ensure_pipeline()
        # Changes no file event announced are found by one walk of each workspace, not one a job.
        pipeline.call_sites.rescan_before_next_use()
        handles = [pipeline.submit(job) for job in jobs]
        self.workspace_handles.update(handles)
        self.send_status()
        return handles

    def workspace_jobs_ended(self, handles: Iterable[CheckHandle]) -> None:
        self.workspace_handles.difference_update(handles)
        self.send_status()

    def publish_traced(self, path: str, result: FileResult, versions: dict[str, int]) -> None:
        self.log_worker_output(result)
        self._publish_traced(path, result, versions)

    def publish_parent_verdicts(self, traced: list[tuple[str, FileResult]],
                                versions: dict[str, int]) -> None:
        for path, result in traced:
            if self.documents.with_parent_verdicts(result) is not result:
                self._publish_traced(path, result, versions)

    def _publish_traced(self, path: str, result: FileResult, versions: dict[str, int]) -> None:
        """Published for a closed file; adopted by an open document if its text is unchanged
        since ``versions``."""
        document = self.documents.get(path)
        if document is None:
            self.publish_closed(path, self.documents.with_parent_verdicts(result))
        elif self.documents.adopt(document, result, versions):
            self.publish(document)

    # -- what the document model decided (fx_lsp.documents.Listener) ---------------------------

    def accepted(self, document: Document, touched: list[Document]) -> None:
        assert document.result is not None
        self.log_worker_output(document.result)
        self.publish(document)
        notebook = self.notebooks.get(document.path)
        # A notebook's views (generated code, graph) are of its cells.
        for uri in [cell.uri for cell in notebook.cells] if notebook else [document.uri]:
            self.protocol.notify(
                TRACED,
                {
                    "uri": uri,
                    "version": document.result_version,
                    "classes": list(dict.fromkeys(m.class_name for m in document.result.modules)),
                },
            )
        for other in touched:
            self.publish(other)
        self.refresh_code_lenses()
        self.refresh_inlay_hints()

    def excluded(self, document: Document) -> None:
        self.clear(document.uri)

    def status(self, message: str = "") -> None:
        self.send_status(message)

    # -- the client's process -------------------------------------------------------------------

    async def watch_client(self, pid: int) -> None:
        """Exit when the editor that started us is gone (it cannot send ``exit`` any more)."""
        while True:
            await asyncio.sleep(1.0)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                logger.info("fx-lsp: client process %s is gone; exiting", pid)
                self.close_engine()
                os._exit(0)
            except PermissionError:
                pass  # alive, owned by someone else
