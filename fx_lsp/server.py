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
import sys
import threading
import uuid
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from fx_lsp import (
    code_actions,
    code_lens,
    diagnostics,
    graph_view,
    hover,
    inlay_hints,
    notebooks,
    positions,
    workspace_trace,
)
from fx_lsp.documents import Document, Documents
from fx_lsp.initialization_options import Options
from fx_lsp.parse_process import ParseProcess
from fx_lsp.protocol import CommandProgress, FxProtocol, JsonText, guarded, json_text
from fx_lsp.settings import Settings
from fx_lsp.snapshot import DocumentSnapshot, Files
from fx_lsp.verdicts_by_mode import verdicts_of
from fxcore import network_isolation
from fxcore.cache import ResultCache
from fxcore.engine import WORKER_LOG, Engine, TraceHandle
from fxcore.job_spec import TraceJob
from fxcore.mode_phases import phase_job
from fxcore.notebook import is_notebook
from fxcore.report import collect
from fxcore.results import CODES, FileResult, ModuleResult
from fxcore.torch_versions import installed_torch_support
from fxcore.version import VERSION
from fxcore.workspace import find_workspace_root, python_files, source_text, trace_jobs

GENERATED_CODE = "fxLsp/generatedCode"
GRAPH = "fxLsp/graph"
STATUS = "fxLsp/status"
TRACED = "fxLsp/traced"
TRACE_WORKSPACE = "fxLsp.server.traceWorkspace"
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
        builds its module from it as from the file: ``fxcore.workspace.source_text``)."""
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


server = FxLanguageServer()


# -- lifecycle ----------------------------------------------------------------------------------


@server.feature(types.INITIALIZE)
@guarded()
def initialize(ls: FxLanguageServer, params: types.InitializeParams) -> None:
    ls.settings.apply(params.initialization_options)


@server.feature(types.INITIALIZED)
@guarded()
async def initialized(ls: FxLanguageServer, params: types.InitializedParams) -> None:
    if ls.process_id is not None:
        ls.watcher = asyncio.ensure_future(ls.watch_client(ls.process_id))
    ls.report_torch()
    if ls.tracing_on():
        ls.ensure_engine()
    elif not ls.settings.options.trusted:
        ls.report_untrusted()
    ls.send_status()
    watched = ls.client_capabilities.workspace
    if (
        watched
        and watched.did_change_watched_files
        and watched.did_change_watched_files.dynamic_registration
    ):
        await ls.client_register_capability_async(
            types.RegistrationParams(
                registrations=[
                    types.Registration(
                        id=str(uuid.uuid4()),
                        method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
                        register_options=types.DidChangeWatchedFilesRegistrationOptions(
                            watchers=[
                                types.FileSystemWatcher(glob_pattern="**/*.py"),
                                types.FileSystemWatcher(glob_pattern="**/pyproject.toml"),
                                # A notebook's constructor calls are call sites too.
                                types.FileSystemWatcher(glob_pattern="**/*.ipynb"),
                                # Constructor calls in documentation (fxcore.call_sites).
                                types.FileSystemWatcher(
                                    glob_pattern="**/*.{md,markdown,rst}"
                                ),
                            ]
                        ),
                    )
                ]
            )
        )
        ls.watches_files = True
    await ls.log_network_isolation()


@server.feature(types.SHUTDOWN)
@guarded()
def shutdown(ls: FxLanguageServer, params: None) -> None:
    for document in ls.documents:
        ls.documents.outdate(document)
    ls.close_engine(wait=False)


@server.feature(types.EXIT)
@guarded()
def exit_(ls: FxLanguageServer, params: None) -> None:
    ls.close_engine()
    ls.parse_process.close()


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
@guarded()
def did_change_configuration(
    ls: FxLanguageServer, params: types.DidChangeConfigurationParams
) -> None:
    before = ls.settings.options
    ls.settings.apply(params.settings)
    if ls.settings.options.trusted != before.trusted:
        ls.set_trusted(ls.settings.options.trusted)
    elif ls.settings.options != before and ls.settings.options.trusted:
        ls.documents.retrace_all()


# -- documents ----------------------------------------------------------------------------------


def _is_pyproject(path: str) -> bool:
    return os.path.basename(path) == "pyproject.toml"


def _config_changed(ls: FxLanguageServer, path: str) -> None:
    root = os.path.dirname(path)
    ls.settings.forget(root)
    for document in ls.documents:
        if ls.root_of(document.path) == root:
            ls.documents.schedule(document)


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
@guarded()
def did_open(ls: FxLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
    item = params.text_document
    path = to_fs_path(item.uri)
    if path is not None and (item.language_id == "python" or path.endswith((".py", ".pyi"))):
        ls.documents.open(item.uri, path, item.version)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
@guarded()
def did_change(ls: FxLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
    path = to_fs_path(params.text_document.uri) or ""
    if _is_pyproject(path):
        ls.settings.forget(os.path.dirname(path))  # the next trace reads the edited buffer
        return
    document = ls.documents.get(path)
    if document is None:
        return
    ls.documents.changed(document, params.text_document.version)
    if ls.options_for(path).run == "onType":
        ls.documents.trace_with_dependents(document, ls.options_for(path).debounce_ms / 1000)
    ls.send_status()


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
@guarded()
def did_save(ls: FxLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
    path = to_fs_path(params.text_document.uri) or ""
    if _is_pyproject(path):
        _config_changed(ls, path)
        return
    ls.files_changed([path])
    document = ls.documents.get(path)
    if document is not None:
        ls.documents.trace_with_dependents(document)
    else:
        ls.documents.file_changed(path)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
@guarded()
def did_close(ls: FxLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
    path = to_fs_path(params.text_document.uri) or ""
    if _is_pyproject(path):
        ls.settings.forget(os.path.dirname(path))  # unsaved edits closed unsaved are gone
    document = ls.documents.close(path)
    if document is None:
        return
    ls.clear(document.uri)
    for other in ls.documents:
        if any(e.traced_path == path for e in other.entries):
            ls.publish(other)
    ls.send_status()


# -- notebooks (LSP 3.17 notebook documents; pygls's workspace keeps their cells) ------------


def _notebook_module(ls: FxLanguageServer, uri: str) -> notebooks.NotebookModule | None:
    """The module of the open notebook at ``uri`` from its cells' current texts (None for a
    notebook with no file, such as an untitled one: nothing to trace it as)."""
    notebook = ls.workspace.get_notebook_document(notebook_uri=uri)
    path = to_fs_path(uri)
    if notebook is None or path is None:
        return None
    cells = {}
    for cell in notebook.cells:
        # pygls keeps documents by their unquoted URIs (VS Code's cell URIs hold %3D).
        document = ls.workspace.text_documents.get(unquote(cell.document))
        if document is not None and document.language_id in (None, "python"):
            cells[cell.document] = (document.version or 0, document.source)
    return notebooks.module_of(notebook, path, cells, ls.encoding)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_OPEN)
@guarded()
def did_open_notebook(ls: FxLanguageServer, params: types.DidOpenNotebookDocumentParams) -> None:
    module = _notebook_module(ls, params.notebook_document.uri)
    if module is None:
        return
    ls.notebooks[module.path] = module
    # A workspace trace may have published on the notebook's file: its cells take over.
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
        uri=diagnostics.path_to_uri(module.path), diagnostics=[]))
    ls.documents.open(module.uri, module.path, 0)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CHANGE)
@guarded()
def did_change_notebook(
    ls: FxLanguageServer, params: types.DidChangeNotebookDocumentParams
) -> None:
    module = _notebook_module(ls, params.notebook_document.uri)
    document = ls.documents.get(module.path) if module is not None else None
    if module is None or document is None:
        return
    before = ls.notebooks[module.path]
    ls.notebooks[module.path] = module
    for gone in {cell.uri for cell in before.cells} - {cell.uri for cell in module.cells}:
        ls.clear(gone)
    if not notebooks.same_module(before, module):
        # Running a cell changes its outputs and execution summary, not the module: no trace.
        ls.documents.changed(document, document.version + 1)
        options = ls.options_for(module.path)
        if options.run == "onType":
            ls.documents.trace_with_dependents(document, options.debounce_ms / 1000)
        ls.send_status()


@server.feature(types.NOTEBOOK_DOCUMENT_DID_SAVE)
@guarded()
def did_save_notebook(ls: FxLanguageServer, params: types.DidSaveNotebookDocumentParams) -> None:
    path = to_fs_path(params.notebook_document.uri) or ""
    # Its cells' constructor calls are call sites (fxcore.call_sites reads the saved file).
    ls.files_changed([path])
    document = ls.documents.get(path)
    if document is not None:
        ls.documents.trace_with_dependents(document)


@server.feature(types.NOTEBOOK_DOCUMENT_DID_CLOSE)
@guarded()
def did_close_notebook(
    ls: FxLanguageServer, params: types.DidCloseNotebookDocumentParams
) -> None:
    path = to_fs_path(params.notebook_document.uri) or ""
    if ls.documents.close(path) is not None:
        ls.clear(params.notebook_document.uri)  # each of its cells
    ls.notebooks.pop(path, None)
    ls.send_status()


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
@guarded()
def did_change_watched_files(
    ls: FxLanguageServer, params: types.DidChangeWatchedFilesParams
) -> None:
    paths = [to_fs_path(change.uri) or "" for change in params.changes]
    ls.files_changed([path for path in paths if path])
    for path in paths:
        if _is_pyproject(path):
            _config_changed(ls, path)
        elif path not in ls.documents:
            ls.documents.file_changed(path)


# -- requests -----------------------------------------------------------------------------------


@server.feature(types.TEXT_DOCUMENT_HOVER)
@guarded()
async def on_hover(ls: FxLanguageServer, params: types.HoverParams) -> types.Hover | None:
    snapshot = ls.snapshot(params.text_document.uri)
    if snapshot is None:
        return None
    position: types.Position | None = params.position
    cell = ls.cell_of(params.text_document.uri)
    if cell is not None:
        position = cell[0].position_to_module(cell[1], params.position)
        if position is None:
            return None  # a line the notebook's module left out
    if hover.lists_fixes(snapshot, position):
        # Planning the quick fixes parses the file (cached per text): in a thread, so that a
        # big file stalls no request.
        answer = await asyncio.to_thread(hover.hover, snapshot, position)
    else:
        answer = hover.hover(snapshot, position)
    return answer if cell is None else notebooks.hover_to_cell(*cell, answer)


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix], resolve_provider=True
    ),
)
@guarded(default=[])
async def on_code_action(
    ls: FxLanguageServer, params: types.CodeActionParams
) -> list[types.CodeAction]:
    snapshot = ls.snapshot(params.text_document.uri)
    if snapshot is None:
        return []
    cell = ls.cell_of(params.text_document.uri)
    if cell is None:
        return await ls.off_loop(code_actions.code_actions, snapshot, params.context,
                                 params.range, ls.resolves_code_actions)
    notebook, index = cell
    requested = notebook.range_to_module(index, params.range)
    if requested is None:
        return []
    context = types.CodeActionContext(
        diagnostics=[moved for d in params.context.diagnostics
                     if (moved := notebooks.diagnostic_to_module(notebook, index, d))],
        only=params.context.only, trigger_kind=params.context.trigger_kind)
    actions = await ls.off_loop(code_actions.code_actions, snapshot, context, requested,
                                ls.resolves_code_actions)
    return [moved for action in actions
            if (moved := notebooks.code_action_to_cell(notebook, index, action))]


@server.feature(types.CODE_ACTION_RESOLVE)
@guarded()
async def on_code_action_resolve(
    ls: FxLanguageServer, action: types.CodeAction
) -> types.CodeAction:
    data = action.data
    uri = data.get("uri") if isinstance(data, dict) else getattr(data, "uri", None)
    snapshot = ls.snapshot(uri) if isinstance(uri, str) else None
    if snapshot is None:
        return action
    cell = ls.cell_of(uri) if isinstance(uri, str) else None
    if cell is None:
        return await ls.off_loop(code_actions.resolve, snapshot, action)
    notebook, index = cell
    in_module = types.CodeAction(
        title=action.title, kind=action.kind, is_preferred=action.is_preferred, data=action.data,
        diagnostics=[moved for d in action.diagnostics or []
                     if (moved := notebooks.diagnostic_to_module(notebook, index, d))])
    resolved = await ls.off_loop(code_actions.resolve, snapshot, in_module)
    return notebooks.code_action_to_cell(notebook, index, resolved) or action


@server.feature(types.TEXT_DOCUMENT_INLAY_HINT)
@guarded(default=[])
def on_inlay_hint(ls: FxLanguageServer, params: types.InlayHintParams) -> list[types.InlayHint]:
    snapshot = ls.snapshot(params.text_document.uri)
    if snapshot is None:
        return []
    cell = ls.cell_of(params.text_document.uri)
    if cell is None:
        return inlay_hints.inlay_hints(snapshot, params.range)
    requested = cell[0].range_to_module(cell[1], params.range)
    if requested is None:
        return []
    return notebooks.inlay_hints_to_cell(*cell, inlay_hints.inlay_hints(snapshot, requested))


@server.feature(types.TEXT_DOCUMENT_CODE_LENS)
@guarded(default=[])
def on_code_lens(ls: FxLanguageServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    snapshot, cell = ls.snapshot(params.text_document.uri), ls.cell_of(params.text_document.uri)
    lenses = code_lens.code_lenses(snapshot) if snapshot is not None else []
    return lenses if cell is None else notebooks.code_lenses_to_cell(*cell, lenses)


def _plain(value: Any) -> Any:
    """pygls hands custom methods their params as namedtuples: back to dicts."""
    if hasattr(value, "_asdict"):
        return {key: _plain(item) for key, item in value._asdict().items()}
    return value


#: An answer about one class of a document, from the request's params.
ClassAnswer = Callable[[DocumentSnapshot, ModuleResult, dict[str, Any]], dict[str, Any]]


async def _answer_about_class(
    ls: FxLanguageServer, params: Any, answer: ClassAnswer
) -> JsonText | None:
    """``answer`` about the class that ``{uri, className}`` or ``{uri, position}`` names, from
    the document's latest result. A huge class's answer takes seconds to build and encode: in
    a thread, so that other requests are answered meanwhile (the event loop takes the GIL
    back every switch interval, see ``serve``; ``json_text`` encodes a piece at a time so that
    it can)."""
    params = _plain(params)
    uri = params.get("uri") if isinstance(params, dict) else None
    snapshot = ls.snapshot(uri) if isinstance(uri, str) else None
    if snapshot is None:
        return None
    position = params.get("position")
    at = types.Position(line=position["line"], character=position["character"]) \
        if isinstance(position, dict) else None
    cell = ls.cell_of(uri) if isinstance(uri, str) else None
    if cell is not None and at is not None:
        at = cell[0].position_to_module(cell[1], at)
    module = code_lens.find_module(snapshot, params.get("className"), at)
    if module is None:
        return None
    if cell is None:
        return await asyncio.to_thread(lambda: json_text(answer(snapshot, module, params)))
    notebook, index = cell

    def in_cells() -> JsonText:
        # The answer as about the cell: its locations in the cells, its lines the cell's.
        found = notebooks.locations_to_cells(notebook, answer(snapshot, module, params))
        found["uri"] = notebook.cells[index].uri
        if "lineNodes" in found:
            found["lineNodes"] = notebooks.line_nodes_to_cell(notebook, index,
                                                              found["lineNodes"])
        return json_text(found)

    return await asyncio.to_thread(in_cells)


@server.feature(GENERATED_CODE)
@guarded()
async def on_generated_code(ls: FxLanguageServer, params: Any) -> JsonText | None:
    return await _answer_about_class(
        ls, params, lambda snapshot, module, _: code_lens.generated_code(snapshot.uri, module))


def _count(params: Any, key: str, default: int, largest: int) -> int:
    """A non-negative integer parameter, ``default`` when absent or not an integer."""
    value = params.get(key) if isinstance(params, dict) else None
    if not isinstance(value, int) or isinstance(value, bool):
        return default
    return min(max(value, 0), largest)


def _graph_page(
    snapshot: DocumentSnapshot, module: ModuleResult, params: dict[str, Any]
) -> dict[str, Any]:
    """The ``fxLsp/graph`` answer: the nodes from ``offset``, at most ``limit`` of them, and
    the version of the result ``module`` comes from. With a ``mode`` param, that mode's graph
    of the class (the first verdict's when the class has no verdict of that mode); ``modes``
    lists the modes the class has a verdict of, for the view's mode switch."""
    verdicts = verdicts_of(snapshot.result.modules, module) if snapshot.result else [module]
    mode = params.get("mode")
    if isinstance(mode, str):
        module = next((other for other in verdicts if other.mode == mode), module)
    offset = _count(params, "offset", 0, len(module.graph))
    limit = max(1, _count(params, "limit", graph_view.NODE_LIMIT, graph_view.NODE_LIMIT))
    return {"uri": snapshot.uri, "version": snapshot.result_version, "mode": module.mode,
            "modes": [verdict.mode for verdict in verdicts],
            **graph_view.graph(module, snapshot.files.lines_of, snapshot.encoding, offset, limit)}


@server.feature(GRAPH)
@guarded()
async def on_graph(ls: FxLanguageServer, params: Any) -> JsonText | None:
    return await _answer_about_class(ls, params, _graph_page)


@server.command(TRACE_WORKSPACE)
@guarded(default={"files": 0, "modules": 0, "failed": 0})
async def trace_workspace(ls: FxLanguageServer, *args: Any) -> dict[str, int]:
    return await workspace_trace.trace_workspace(ls, await CommandProgress.start(ls.protocol))


def serve(tcp: tuple[str, int] | None = None) -> None:
    """Run the server on stdio, or on ``tcp = (host, port)``; stop the engine on the way out."""
    logging.basicConfig(level=logging.WARNING)
    # What the zygote prints (torch's import warnings) goes to the log (stderr: VS Code's
    # output channel), never to stdout, the protocol.
    WORKER_LOG.setLevel(logging.INFO)
    # Quick-fix requests are planned in a thread (their parses run in another process); a
    # shorter switch interval than the default 5 ms lets the event loop take the GIL back
    # sooner, so other requests wait less.
    sys.setswitchinterval(0.001)
    try:
        if tcp is None:
            server.start_io()
        else:
            server.start_tcp(*tcp)
    finally:
        server.close_engine()
        server.parse_process.close()
