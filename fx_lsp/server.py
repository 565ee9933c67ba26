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
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from fx_lsp import (
    diagnostics,
    notebooks,
    positions,
)
from fx_lsp.documents import Document, Documents
from fx_lsp.initialization_options import Options
from fx_lsp.parse_process import ParseProcess
from fx_lsp.protocol import (
    STATUS,
    TRACED,
    FxProtocol,
    guarded,
)
from fx_lsp.settings import Settings
from fx_lsp.snapshot import DocumentSnapshot, Files
from fxcore.host import network_isolation
from fxcore.host.cache import ResultCache
from fxcore.host.engine import Engine
from fxcore.host.torch_versions import installed_torch_support
from fxcore.host.trace_handle import TraceHandle
from fxcore.model.job_spec import TraceJob
from fxcore.model.results import CODES, FileResult
from fxcore.model.version import VERSION
from fxcore.reporting.mode_phases import phase_job
from fxcore.reporting.report import collect
from fxcore.workspace.notebook.cells import is_notebook
from fxcore.workspace.paths import find_workspace_root, python_files, source_text, trace_jobs

UNTRUSTED_MESSAGE = (
    "fx-lsp: tracing is off until the workspace is trusted (no code from it is imported or run)."
)

logger = logging.getLogger(__name__)


class FxLanguageServer(LanguageServer):
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
        self.workspace_handles: set[TraceHandle] = set()
        self._status: tuple[str, int, str] | None = None
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

    # -- the workspace --------------------------------------------------------------------------

    def workspace_folders(self) -> list[str] | None:
        """The folders the client opened (``workspaceFolders``, else ``rootUri``), or None
        when it opened none (a single file)."""
        folders = [to_fs_path(f.uri) for f in self.workspace.folders.values()]
        found = [f for f in folders if f] or [self.workspace.root_path]
        return [f for f in found if f] or None

    def root_of(self, path: str) -> str:
        """The workspace root of ``path``, never above the folder the client opened: quick fixes
        edit its ``pyproject.toml`` and the cache lives there."""
        return find_workspace_root(path, self.workspace_folders())

    def options_for(self, path: str) -> Options:
        return self.settings.options_for(path)

    def buffer_text(self, document: Document) -> str:
        """An open document's text: its buffer's, a notebook's module's (what its results'
        lines are lines of)."""
        notebook = self.notebooks.get(document.path)
        if notebook is not None:
            return notebook.text
        return self.workspace.get_text_document(document.uri).source

    def overlay_text(self, document: Document) -> str:
        """What a job gets for an open document: its buffer, a notebook's JSON (the worker
        builds its module from it as from the file: ``fxcore.workspace.paths.source_text``)."""
        notebook = self.notebooks.get(document.path)
        if notebook is not None:
            return notebook.json
        return self.workspace.get_text_document(document.uri).source

    def _open_text(self, path: str) -> str | None:
        """The text of an open buffer for ``path`` (any language), else None."""
        notebook = self.notebooks.get(path)
        if notebook is not None:
            return notebook.text
        for document in self.workspace.text_documents.values():
            # A notebook cell's document has the notebook's path: it is not the file's text.
            if document.path == path and self.workspace.get_notebook_document(
                    cell_uri=document.uri) is None:
                return document.source
        return None

    def text_of(self, path: str) -> str | None:
        """The buffer if open, else the file on disk (None unless UTF-8: fixes write it back)."""
        text = self._open_text(path)
        return text if text is not None else source_text(path, {}, strict=True)

    def lines_of(self, path: str) -> list[str]:
        notebook = self.notebooks.get(path)
        if notebook is not None:
            return notebook.lines
        document = self.documents.get(path)
        if document is not None:
            return positions.split_lines(self.buffer_text(document))
        try:
            mtime = os.path.getmtime(path)
        except OSError:
            return [""]
        cached = self._disk_lines.get(path)
        if cached is None or cached[0] != mtime:
            cached = (mtime, positions.split_lines(self.text_of(path) or ""))
            self._disk_lines[path] = cached
        return cached[1]

    def cell_of(self, uri: str) -> tuple[notebooks.NotebookModule, int] | None:
        """The open notebook whose code cell ``uri`` is, and the cell's index, if it is one."""
        notebook = self.workspace.get_notebook_document(cell_uri=uri)
        module = self.notebooks.get(to_fs_path(notebook.uri) or "") if notebook else None
        index = module.cell_index(uri) if module is not None else None
        return None if module is None or index is None else (module, index)

    def snapshot(self, uri: str) -> DocumentSnapshot | None:
        """The open document at ``uri`` as a request about it sees it, or None if it is not
        open. A notebook cell's is its notebook's, the module (the handlers move the request
        and the answer between the cell and the module with ``fx_lsp.notebooks``)."""
        cell = self.cell_of(uri)
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
            text=self.buffer_text(document),
            encoding=self.encoding,
            options=self.options_for(document.path),
            result=document.result,
            result_version=document.result_version,
            current=self.documents.is_current(document),
            entries=tuple(document.entries),
            others=tuple(self.documents.other_results(document)),
            traced_with=tuple(self.documents.results_traced_with(document)),
            files=self.files,
        )

    async def off_loop(self, function: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(
            self.fix_executor, functools.partial(function, *args)
        )

    @property
    def resolves_code_actions(self) -> bool:
        """The client asks for a code action's edit with ``codeAction/resolve``."""
        document = self.client_capabilities.text_document
        code_action = document.code_action if document else None
        support = code_action.resolve_support if code_action else None
        return support is not None and "edit" in support.properties

    @property
    def encoding(self) -> str:
        return str(self.workspace.position_encoding or types.PositionEncodingKind.Utf16)

    # -- the engine -----------------------------------------------------------------------------

    def ensure_engine(self) -> Engine:
        if self.engine is None:
            # Unchanged files (and their imports) are answered from .fx-lsp-cache/.
            self.engine = Engine(cache=ResultCache())
            # Starting the worker imports torch (over a second): not on the event loop.
            threading.Thread(target=self.engine.warm_up, daemon=True).start()
        return self.engine

    def close_engine(self, wait: bool = True) -> None:
        """Kill the workers. ``wait=False`` closes in a thread, for callers on the event loop:
        closing can take seconds (a job waits for its worker's pipes), and the worker process
        exits by itself when this process does."""
        engine, self.engine = self.engine, None
        if engine is None:
            return
        if wait:
            engine.close()
        else:
            threading.Thread(target=engine.close, name="fx-lsp-close", daemon=True).start()

    def _start_trace(self, path: str, overlays: dict[str, str], phase: int) -> TraceHandle | None:
        jobs = trace_jobs([path], self.root_of, self.settings.engine_config, overlays)
        job = phase_job(jobs[0], phase) if jobs else None
        if job is None:
            return None
        engine = self.ensure_engine()
        if not self.watches_files:
            # No file events tell the call-site index what changed on disk: the job looks.
            engine.call_sites.rescan_before_next_use()
        return engine.submit(job)

    def files_changed(self, paths: list[str]) -> None:
        """Files changed on disk: bring the call-site index up to date (in a thread: it reads
        them, and waits while a job builds the index), then retrace the open documents with a
        class whose constructor calls changed."""
        engine = self.engine
        if engine is None or not paths:
            return

        @guarded()
        async def update() -> None:
            changed = await asyncio.to_thread(engine.call_sites.changed, paths)
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
                self.ensure_engine()
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
        jobs = trace_jobs(python_files(self.workspace_folders() or [],
                                       notebooks=self.client_has_notebooks()),
                          self.root_of, self.settings.engine_config, texts)
        return jobs, versions

    def submit_workspace(self, jobs: list[TraceJob]) -> list[TraceHandle] | None:
        if not self.settings.options.trusted:
            self.report_untrusted()
            return None
        if not self.tracing_on():
            self.report_torch()
            return None
        engine = self.ensure_engine()
        # Changes no file event announced are found by one walk of each workspace, not one a job.
        engine.call_sites.rescan_before_next_use()
        handles = [engine.submit(job) for job in jobs]
        self.workspace_handles.update(handles)
        self.send_status()
        return handles

    def workspace_jobs_ended(self, handles: Iterable[TraceHandle]) -> None:
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

    # -- notifications --------------------------------------------------------------------------

    def send_status(self, message: str = "") -> None:
        pending = self.documents.pending + len(self.workspace_handles)
        if not self.settings.options.trusted:
            state = "disabled"
        elif self.torch.refusal is not None:
            state, message = "error", self.torch.refusal
        elif message:
            state = "error"
        else:
            state = "tracing" if pending else "idle"
        if (state, pending, message) == self._status:
            return
        self._status = (state, pending, message)
        params: dict[str, Any] = {"state": state, "pending": pending}
        if message:
            params["message"] = message
        self.protocol.notify(STATUS, params)

    def publish(self, document: Document) -> None:
        if not self.documents.is_current(document):
            # The result is of an older text: the client has moved the diagnostics it shows
            # with the edits, and a trace of this text publishes anew.
            return
        others = self.documents.results_traced_with(document)
        report = collect(
            [r for r in (document.result, *others) if r is not None],
            self.text_of,
            self.settings.selection,
            checked=[document.path] if document.result is not None else [],
        )
        document.entries = diagnostics.build(
            document.path, report, self.lines_of, self.options_for(document.path), self.encoding,
            self.cell_words,
        )
        notebook = self.notebooks.get(document.path)
        if notebook is not None:
            # A notebook's diagnostics, in the module, go to the cells they are in.
            for uri, shown in notebooks.cell_diagnostics(
                    notebook, [entry.diagnostic for entry in document.entries]).items():
                self.text_document_publish_diagnostics(
                    types.PublishDiagnosticsParams(uri=uri, diagnostics=shown))
            return
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=document.uri,
                diagnostics=[entry.diagnostic for entry in document.entries],
                version=document.version,
            )
        )

    def cell_words(self, path: str, line: int) -> str | None:
        """``cell 3:5`` for line ``line`` of an open notebook's module, as ``fx-lsp check``
        counts cells and lines (from 1)."""
        notebook = self.notebooks.get(path)
        place = notebook.place_of(line - 1) if notebook is not None else None
        return None if place is None else f"cell {place[0] + 1}:{place[1] + 1}"

    def client_has_notebooks(self) -> bool:
        """The client syncs notebooks (LSP 3.17): a workspace trace includes them."""
        return self.client_capabilities.notebook_document is not None

    def publish_closed(self, path: str, result: FileResult) -> None:
        """The diagnostics of a file that is not open (from a workspace trace); a notebook's
        on its file, each naming its cell (``notebooks.closed_notebook_diagnostics``)."""
        report = collect([result], self.text_of, self.settings.selection)
        entries = diagnostics.build(
            path, report, self.lines_of, self.options_for(path), self.encoding
        )
        shown = [e.diagnostic for e in entries]
        if is_notebook(path):
            shown = notebooks.closed_notebook_diagnostics(path, shown)
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=diagnostics.path_to_uri(path), diagnostics=shown)
        )

    def clear(self, uri: str) -> None:
        notebook = self.notebooks.get(to_fs_path(uri) or "")
        if notebook is not None and notebook.uri == uri:
            for cell in notebook.cells:
                self.clear(cell.uri)
            return
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )

    def refresh_inlay_hints(self) -> None:
        workspace = self.client_capabilities.workspace
        if workspace and workspace.inlay_hint and workspace.inlay_hint.refresh_support:
            self.workspace_inlay_hint_refresh(None)

    def refresh_code_lenses(self) -> None:
        workspace = self.client_capabilities.workspace
        if workspace and workspace.code_lens and workspace.code_lens.refresh_support:
            self.workspace_code_lens_refresh(None)

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
