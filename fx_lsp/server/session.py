"""A language-server session: its state as the objects it holds, and a snapshot of an open
document for each request about it.

``Session`` holds pygls's server (the connection) and, each an object of its own, the texts
it reads (``WorkspaceTexts``), the settings, the trace engine (``TraceEngine``), the open
documents and their traces (``Documents``), and what it sends (``Messages``, ``Publisher``).
The handlers in ``fx_lsp/server/handlers/`` are given the session; a request about a document is
answered from ``snapshot(uri)``, taken when it arrives. The session is the documents'
``Listener`` and the workspace trace's ``Host``: it hands what they decide to the publisher.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pygls.uris import to_fs_path

from fx_lsp.features import positions
from fx_lsp.features.baseline_hints import BaselineFiles
from fx_lsp.features.parse_process import ParseProcess
from fx_lsp.features.snapshot import DocumentSnapshot, Files
from fx_lsp.server.documents import Document, Documents
from fx_lsp.server.language_server import FxLanguageServer
from fx_lsp.server.notebooks import NotebookModule
from fx_lsp.server.protocol import guarded
from fx_lsp.server.publishing import Messages, Publisher
from fx_lsp.server.settings import Settings
from fx_lsp.server.trace_engine import TraceEngine
from fx_lsp.server.workspace_texts import WorkspaceTexts
from fxcore.api.session import CheckHandle, EngineSession
from fxcore.api.workers import installed_torch_support
from fxcore.model.job_spec import TraceJob
from fxcore.model.results import FileResult

logger = logging.getLogger(__name__)


class Session:
    def __init__(self, server: FxLanguageServer) -> None:
        #: The connection: pygls's workspace, the client's capabilities, what goes out.
        self.server = server
        #: The installed torch, judged once: a refused one means no worker ever starts.
        self.torch = installed_torch_support()
        #: The open notebooks' modules, by the notebook's path (``server.notebooks``): each
        #: is one of ``documents``, whose text is the module's.
        self.notebooks: dict[str, NotebookModule] = {}
        self.messages = Messages(server)
        self.texts = WorkspaceTexts(server, self.notebooks)
        self.settings = Settings(self.texts.open_text, self.texts.root_of, self.messages.warn)
        self.engine = TraceEngine(self.texts.root_of, self.settings)
        self.documents = Documents(
            self.engine.start, self.texts.overlay_text, self.tracing_on, self)
        self.baselines = BaselineFiles()
        #: Quick-fix planning and edits parse whole files (seconds on a 20,000-line file): the
        #: parses run in a process of their own, which holds no GIL of ours; the requests wait
        #: for it in one thread, so that they pile up there rather than on the event loop.
        self.fix_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fx-lsp-fixes")
        self.parse_process = ParseProcess()
        self.files = Files(self.texts.text_of, self.lines_of, self.documents.version_of,
                           self.texts.root_of, self.parse_process.run, self.texts.cell_words,
                           self.texts.edited_text)
        self.publisher = Publisher(server, self.settings, self.documents, self.files,
                                   self.notebooks, self.baselines)
        #: Watches the editor's process (``watch_client``).
        self.watcher: asyncio.Future[None] | None = None
        #: Tasks nothing else holds on to (asyncio keeps only weak references).
        self._tasks: set[asyncio.Future[None]] = set()
        #: Woken whenever the running traces change (``until_traced``).
        self._trace_waiters: set[asyncio.Future[None]] = set()

    def tracing_on(self) -> bool:
        """Whether documents are traced: the workspace is trusted and torch is supported."""
        return self.settings.options.trusted and self.torch.refusal is None

    def send_status(self, message: str = "") -> None:
        """The status item's state: how many traces are running, or why none can."""
        pending = self.documents.pending + len(self.engine.workspace_handles)
        if not self.settings.options.trusted:
            state = "disabled"
        elif self.torch.refusal is not None:
            state, message = "error", self.torch.refusal
        elif message:
            state = "error"
        else:
            state = "tracing" if pending else "idle"
        self.publisher.status(state, pending, message)
        for waiter in self._trace_waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._trace_waiters.clear()

    async def until_traced(self, path: str) -> None:
        """Until the open document at ``path`` has a stage of its current trace published, or
        no trace of it is planned or running: what is published on it is then of its text
        (the stages still to come named in ``Document.pending_stages``). Bounded by the trace
        jobs' own timeouts; a cancelled request stops waiting."""
        while (document := self.documents.get(path)) is not None and document.busy \
                and not document.stage_published:
            waiter = asyncio.get_running_loop().create_future()
            self._trace_waiters.add(waiter)
            await waiter

    # -- what a request sees ------------------------------------------------------------------

    def lines_of(self, path: str) -> list[str]:
        """The lines of ``path``: an open notebook's module's, an open buffer's, else the
        file's on disk."""
        notebook = self.notebooks.get(path)
        if notebook is not None:
            return notebook.lines
        document = self.documents.get(path)
        if document is not None:
            return positions.split_lines(self.texts.buffer_text(document))
        return self.texts.disk_lines(path)

    def snapshot(self, uri: str) -> DocumentSnapshot | None:
        """The open document at ``uri`` as a request about it sees it, or None if it is not
        open. A notebook cell's is its notebook's, the module (the handlers move the request
        and the answer between the cell and the module with ``fx_lsp.server.notebooks``)."""
        cell = self.texts.cell_of(uri)
        path = cell[0].path if cell is not None else to_fs_path(uri) or ""
        document = self.documents.get(path)
        if document is None:
            return None
        if cell is not None and not self.documents.is_current(document):
            # Its result's module lines are of the cells as they were: through today's line
            # map they would land in other cells. The trace of the new text publishes anew and
            # asks the client to ask again (code lenses, inlay hints).
            return None
        return DocumentSnapshot(
            uri=document.uri,
            path=document.path,
            version=document.version,
            text=self.texts.buffer_text(document),
            encoding=self.server.encoding,
            options=self.settings.options_for(document.path),
            result=document.result,
            result_version=document.result_version,
            current=self.documents.is_current(document),
            entries=tuple(document.entries),
            others=tuple(self.documents.other_results(document)),
            traced_with=tuple(self.documents.results_traced_with(document)),
            files=self.files,
        )

    async def off_loop(self, function: Callable[..., Any], *args: Any) -> Any:
        """``function(*args)`` in the quick fixes' thread."""
        return await asyncio.get_running_loop().run_in_executor(
            self.fix_executor, functools.partial(function, *args)
        )

    # -- changes ------------------------------------------------------------------------------

    def files_changed(self, paths: list[str]) -> None:
        """Files changed on disk: bring the call-site index up to date (in a thread: it reads
        them, and waits while a job builds the index), then retrace the open documents with a
        class whose constructor calls changed."""
        session = self.engine.session
        if session is None or not paths:
            return

        @guarded()
        async def update() -> None:
            changed = await asyncio.to_thread(session.files_changed, paths)
            for document in self.documents:
                names = changed.get(os.path.abspath(self.texts.root_of(document.path)), set())
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
                self.engine.ensure_session()
            self.documents.retrace_all()
        else:
            self.documents.stop_all()
            for document in self.documents:
                self.publisher.clear(document.uri)
            # Not on the event loop: closing waits for the workers, which can take seconds.
            self.engine.close(wait=False)
            self.messages.say_untrusted()
        self.send_status()

    # -- what the documents decided (fx_lsp.server.documents.Listener) -----------------------

    def accepted(self, document: Document, touched: list[Document]) -> None:
        assert document.result is not None
        self.messages.log_worker_output(document.result)
        self.publisher.accepted(document, touched)

    def excluded(self, document: Document) -> None:
        self.publisher.clear(document.uri)

    def status(self, message: str = "") -> None:
        self.send_status(message)

    # -- the workspace trace (fx_lsp.server.workspace_trace.Host) ----------------------------

    def workspace_jobs(self) -> tuple[list[TraceJob], dict[str, int]]:
        texts, versions = self.documents.overlays()
        jobs = EngineSession.workspace_jobs(self.texts.workspace_folders() or [],
                                            self.texts.root_of, self.settings.engine_config,
                                            texts, self.server.client_has_notebooks())
        return jobs, versions

    def submit_workspace(self, jobs: list[TraceJob]) -> list[CheckHandle] | None:
        if not self.settings.options.trusted:
            self.messages.report_untrusted()
            return None
        if not self.tracing_on():
            self.messages.report_torch(self.torch)
            return None
        handles = self.engine.submit_workspace(jobs)
        self.send_status()
        return handles

    def workspace_jobs_ended(self, handles: Iterable[CheckHandle]) -> None:
        self.engine.workspace_jobs_ended(handles)
        self.send_status()

    def publish_traced(self, path: str, result: FileResult, versions: dict[str, int]) -> None:
        self.messages.log_worker_output(result)
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
            self.publisher.publish_closed(path, self.documents.with_parent_verdicts(result))
        elif self.documents.adopt(document, result, versions):
            self.publisher.publish(document)

    # -- the end ------------------------------------------------------------------------------

    def close(self) -> None:
        """Kill the workers and the parse process (the session is over)."""
        self.engine.close()
        self.parse_process.close()

    async def watch_client(self, pid: int) -> None:
        """Exit when the editor that started us is gone (it cannot send ``exit`` any more)."""
        while True:
            await asyncio.sleep(1.0)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                logger.info("fx-lsp: client process %s is gone; exiting", pid)
                self.engine.close()
                os._exit(0)
            except PermissionError:
                pass  # alive, owned by someone else
