"""The pygls 2 language server: a thin adapter from fxcore's trace results to LSP.

Documents are traced on open and save (and, with ``run = "onType"``, on change after a
per-document debounce). Every job gets the texts of all open buffers as overlays, so unsaved
edits are what gets imported. A job is outdated as soon as its document changes or a file it
imported changes: it is cancelled (its worker killed) and its result, should it still arrive,
dropped. Requests answer from the latest accepted results and never wait for a trace.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
import os
import sys
import threading
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol, lsp_method
from pygls.uris import to_fs_path

from fx_lsp import code_actions, code_lens, diagnostics, hover, positions
from fx_lsp.initialization_options import Options, client_settings, parse_options
from fx_lsp.parse_process import ParseProcess
from fxcore import fix_plan
from fxcore.cache import ResultCache
from fxcore.config import ProjectConfig, is_valid_timeout, read_project_config
from fxcore.engine import Engine, TraceHandle
from fxcore.parent_arguments import apply_parent_arguments
from fxcore.results import CODES, EngineConfig, FileResult
from fxcore.version import VERSION
from fxcore.workspace import find_workspace_root, python_files, source_text, trace_jobs

GENERATED_CODE = "fxLsp/generatedCode"
STATUS = "fxLsp/status"
TRACED = "fxLsp/traced"
TRACE_WORKSPACE = "fxLsp.server.traceWorkspace"
UNTRUSTED_MESSAGE = (
    "fx-lsp: tracing is off until the workspace is trusted (no code from it is imported or run)."
)

logger = logging.getLogger(__name__)

_work_done_token: contextvars.ContextVar[types.ProgressToken | None] = contextvars.ContextVar(
    "work_done_token", default=None
)


class FxProtocol(LanguageServerProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: Ids of requests the client cancelled. pygls answers them as cancelled but cannot stop
        #: a command handler that already runs, so long commands check this set themselves.
        self.cancelled_requests: set[Any] = set()

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        self.cancelled_requests.add(msg_id)
        super()._handle_cancel_notification(msg_id)

    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(self, params: types.ExecuteCommandParams) -> Any:
        # pygls passes a command handler only its arguments; the client's progress token is
        # in the params, so hand it over through a context variable (copied into the task).
        _work_done_token.set(params.work_done_token)
        return (yield from super().lsp_workspace__execute_command(params))


@dataclass
class Document:
    """An open Python buffer and the state of its traces."""

    uri: str
    path: str
    version: int
    #: Bumped whenever a trace of this document becomes outdated.
    generation: int = 0
    timer: asyncio.TimerHandle | None = None
    handle: TraceHandle | None = None
    #: The latest result accepted for this document, the version it was for, and the versions
    #: of the other open buffers it was traced with.
    result: FileResult | None = None
    result_version: int | None = None
    overlay_versions: dict[str, int] = field(default_factory=dict)
    entries: list[diagnostics.Entry] = field(default_factory=list)


F = TypeVar("F", bound=Callable[..., Any])


def guarded(default: Any = None) -> Callable[[F], F]:
    """Never let an exception escape a handler: log it and answer ``default``."""

    def decorate(function: F) -> F:
        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return function(*args, **kwargs)
            except Exception:
                logger.exception("fx-lsp: %s failed", function.__name__)
                return default

        return wrapper  # type: ignore[return-value]

    return decorate


def guarded_async(default: Any = None) -> Callable[[F], F]:
    """``guarded`` for coroutine handlers."""

    def decorate(function: F) -> F:
        @functools.wraps(function)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return await function(*args, **kwargs)
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.exception("fx-lsp: %s failed", function.__name__)
                return default

        return wrapper  # type: ignore[return-value]

    return decorate


class FxLanguageServer(LanguageServer):
    protocol: FxProtocol

    def __init__(self) -> None:
        super().__init__(
            "fx-lsp",
            VERSION,
            protocol_cls=FxProtocol,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.engine: Engine | None = None
        self.documents: dict[str, Document] = {}
        self.settings: dict[str, Any] = {}
        self.options = Options()
        self._root_options: dict[str, Options] = {}
        self._project_configs: dict[str, ProjectConfig] = {}
        self._reported: set[str] = set()
        self._workspace_handles: set[TraceHandle] = set()
        #: Latest results, by path, whose roots built workspace classes: their derived
        #: verdicts serve the classes of other files (fxcore.parent_arguments).
        self.parent_results: dict[str, FileResult] = {}
        self._status: tuple[str, int, str] | None = None
        self._disk_lines: dict[str, tuple[float, list[str]]] = {}
        self.watcher: asyncio.Future[None] | None = None
        #: Quick-fix planning and edits parse whole files (seconds on a 20,000-line file): the
        #: parses run in a process of their own, which holds no GIL of ours; the requests wait
        #: for it in one thread, so that they pile up there rather than on the event loop.
        self.fix_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fx-lsp-fixes")
        self.parse_process = ParseProcess()

    # -- settings -------------------------------------------------------------------------------

    def report_once(self, messages: list[str], kind: types.MessageType) -> None:
        for message in messages:
            if message not in self._reported:
                self._reported.add(message)
                self.window_show_message(types.ShowMessageParams(type=kind, message=message))

    def apply_settings(self, raw: Any) -> None:
        """New client settings. ``trusted`` keeps its value when they omit it: settings rebuilt
        from defaults must not trust a workspace the user has not trusted."""
        self.settings = client_settings(raw)
        options, errors = parse_options(self.settings)
        if "trusted" not in self.settings:
            options = replace(options, trusted=self.options.trusted)
        self.options = options
        self.report_once(errors, types.MessageType.Warning)
        self._root_options.clear()
        self._project_configs.clear()

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

    def project_config(self, root: str) -> ProjectConfig:
        """``<root>/pyproject.toml``'s ``[tool.fx-lsp]``, from its buffer when it is open
        (unsaved edits apply to every key at once), read once per change."""
        if root not in self._project_configs:
            found = read_project_config(root, self._open_text(os.path.join(root, "pyproject.toml")))
            self.report_once(found.problems, types.MessageType.Warning)
            self._project_configs[root] = found
        return self._project_configs[root]

    def options_for(self, path: str) -> Options:
        """Client settings overlaid by the ``[tool.fx-lsp]`` of the file's workspace folder."""
        root = self.root_of(path)
        if root not in self._root_options:
            options, problems = parse_options(
                self.settings, self.project_config(root).table, os.path.join(root, "pyproject.toml")
            )
            self.report_once(problems, types.MessageType.Warning)
            self._root_options[root] = replace(options, trusted=self.options.trusted)
        return self._root_options[root]

    def engine_config(self, root: str) -> EngineConfig:
        """The project's engine config; its ``timeout`` if it sets a valid one, else the
        client's."""
        project = self.project_config(root)
        if is_valid_timeout(project.table.get("timeout")):
            return project.engine
        return replace(project.engine, timeout=self.options_for(root).timeout)

    def forget_config(self, root: str) -> None:
        self._root_options.pop(root, None)
        self._project_configs.pop(root, None)

    # -- texts ----------------------------------------------------------------------------------

    def _open_text(self, path: str) -> str | None:
        """The text of an open buffer for ``path`` (any language), else None."""
        for document in self.workspace.text_documents.values():
            if document.path == path:
                return document.source
        return None

    def text_of(self, path: str) -> str | None:
        """The buffer if open, else the file on disk (None unless UTF-8: fixes write it back)."""
        text = self._open_text(path)
        return text if text is not None else source_text(path, {}, strict=True)

    def lines_of(self, path: str) -> list[str]:
        document = self.documents.get(path)
        if document is not None:
            return positions.split_lines(self.workspace.get_text_document(document.uri).source)
        try:
            mtime = os.path.getmtime(path)
        except OSError:
            return [""]
        cached = self._disk_lines.get(path)
        if cached is None or cached[0] != mtime:
            cached = (mtime, positions.split_lines(self.text_of(path) or ""))
            self._disk_lines[path] = cached
        return cached[1]

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

    def version_of(self, path: str) -> int | None:
        document = self.documents.get(path)
        return document.version if document is not None else None

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

    def send_status(self, message: str = "") -> None:
        pending = sum(1 for d in self.documents.values() if d.handle is not None)
        pending += len(self._workspace_handles)
        if not self.options.trusted:
            state = "disabled"
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

    # -- scheduling -----------------------------------------------------------------------------

    def outdate(self, document: Document) -> None:
        """The running or planned trace of ``document`` no longer matches: stop it."""
        document.generation += 1
        if document.timer is not None:
            document.timer.cancel()
            document.timer = None
        if document.handle is not None:
            document.handle.cancel()
            document.handle = None

    def schedule(self, document: Document, delay: float = 0.0) -> None:
        self.outdate(document)
        if not self.options.trusted:
            return
        loop = asyncio.get_running_loop()
        document.timer = loop.call_later(delay, self._submit, document, document.generation)

    def dependents(self, path: str) -> list[Document]:
        """Open documents whose last trace imported ``path`` (or whose first one still runs)."""
        return [
            d
            for d in self.documents.values()
            if d.path != path
            and (
                (d.result is not None and path in d.result.imported_files)
                or (d.result is None and d.handle is not None)
            )
        ]

    def trace_with_dependents(self, document: Document, delay: float) -> None:
        self.schedule(document, delay)
        for dependent in self.dependents(document.path):
            self.schedule(dependent, delay)

    def overlays(self) -> tuple[dict[str, str], dict[str, int]]:
        texts, versions = {}, {}
        for document in self.documents.values():
            texts[document.path] = self.workspace.get_text_document(document.uri).source
            versions[document.path] = document.version
        return texts, versions

    def _submit(self, document: Document, generation: int) -> None:
        try:
            document.timer = None
            if (
                self.documents.get(document.path) is not document
                or generation != document.generation
            ):
                return
            texts, versions = self.overlays()
            jobs = trace_jobs([document.path], self.root_of, self.engine_config, texts)
            if not jobs:
                # Excluded by its project's `exclude`: as in `fx-lsp check`, no verdict.
                document.result = None
                self.clear(document.uri)
                self.send_status()
                return
            handle = self.ensure_engine().submit(jobs[0])
            document.handle = handle
            loop = asyncio.get_running_loop()
            version = document.version
            handle.future.add_done_callback(
                lambda future: loop.call_soon_threadsafe(
                    self._finished, document, generation, version, versions, handle, future
                )
            )
            self.send_status()
        except Exception as error:
            logger.exception("fx-lsp: cannot start a trace of %s", document.path)
            self.send_status(f"cannot trace {os.path.basename(document.path)}: {error}")

    def _finished(
        self,
        document: Document,
        generation: int,
        version: int,
        versions: dict[str, int],
        handle: TraceHandle,
        future: Future[FileResult],
    ) -> None:
        try:
            if document.handle is handle:
                document.handle = None
            current = (
                self.documents.get(document.path) is document
                and document.generation == generation
                and document.version == version
            )
            if future.cancelled() or not current:
                self.send_status()
                return
            error = future.exception()
            if error is not None:
                self.send_status(f"tracing {os.path.basename(document.path)} failed: {error}")
                return
            previous = document.result
            self.log_worker_output(future.result())
            document.result = self.with_parent_verdicts(future.result())
            document.result_version = version
            document.overlay_versions = versions
            self.publish(document)
            self.protocol.notify(
                TRACED,
                {
                    "uri": document.uri,
                    "version": version,
                    "classes": [m.class_name for m in document.result.modules],
                },
            )
            # Failures this trace located in other open files (or no longer does) show there.
            touched = {
                f.path
                for r in (previous, document.result)
                if r
                for m in r.modules
                for f in m.failures
            }
            for other in self.documents.values():
                if other is not document and other.path in touched:
                    self.publish(other)
            self.refresh_code_lenses()
            self.send_status()
        except Exception:
            logger.exception("fx-lsp: cannot publish the trace of %s", document.path)

    def publish(self, document: Document) -> None:
        own_version = document.result_version if document.result is not None else document.version
        if own_version != document.version:
            # The result is of an older text, whose lines have moved: the client has moved the
            # diagnostics it shows with the edits, and a trace of this text publishes anew.
            return
        others = [
            d.result
            for d in self.documents.values()
            if d is not document
            and d.result is not None
            and d.overlay_versions.get(document.path) == own_version
        ]
        document.entries = diagnostics.build(
            document.path,
            document.result,
            others,
            self.lines_of,
            self.options_for(document.path),
            self.encoding,
        )
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(
                uri=document.uri,
                diagnostics=[entry.diagnostic for entry in document.entries],
                version=own_version,
            )
        )

    def clear(self, uri: str) -> None:
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=[])
        )

    def refresh_code_lenses(self) -> None:
        workspace = self.client_capabilities.workspace
        if workspace and workspace.code_lens and workspace.code_lens.refresh_support:
            self.workspace_code_lens_refresh(None)

    def retrace_all(self) -> None:
        for document in self.documents.values():
            self.schedule(document)

    def set_trusted(self, trusted: bool) -> None:
        if trusted:
            self.ensure_engine()
            self.retrace_all()
        else:
            for document in self.documents.values():
                self.outdate(document)
                document.result = None
                self.clear(document.uri)
            # Not on the event loop: closing waits for the workers, which can take seconds.
            self.close_engine(wait=False)
            self.window_show_message(
                types.ShowMessageParams(type=types.MessageType.Info, message=UNTRUSTED_MESSAGE)
            )
        self.send_status()

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

    # -- trace workspace ------------------------------------------------------------------------

    async def trace_workspace(self) -> dict[str, int]:
        token = _work_done_token.get()
        progress = self.work_done_progress
        if token is None:
            window = self.client_capabilities.window
            if window and window.work_done_progress:
                token = str(uuid.uuid4())
                try:
                    await progress.create_async(token)
                except Exception:
                    token = None
        texts, versions = self.overlays()
        jobs = trace_jobs(
            python_files(self.workspace_folders() or []), self.root_of, self.engine_config, texts
        )
        files = [job.path for job in jobs]
        summary = {"files": len(files), "modules": 0, "failed": 0}
        if not self.options.trusted:
            self.report_once([UNTRUSTED_MESSAGE], types.MessageType.Info)
            return summary
        if token is not None:
            progress.begin(
                token,
                types.WorkDoneProgressBegin(
                    title="fx-lsp: tracing the workspace",
                    cancellable=True,
                    message=f"0/{len(files)} files",
                    percentage=0,
                ),
            )
        progress_cancelled = progress.tokens.get(token) if token is not None else None
        request_id = self.protocol.msg_id

        def cancelled() -> bool:
            if progress_cancelled is not None and progress_cancelled.cancelled():
                return True
            return request_id in self.protocol.cancelled_requests
        engine = self.ensure_engine()
        handles = [engine.submit(job) for job in jobs]
        self._workspace_handles.update(handles)
        self.send_status()
        done = 0
        finished_results: list[tuple[str, FileResult]] = []
        try:
            pending = {asyncio.wrap_future(h.future): h for h in handles}
            waiting = set(pending)
            while waiting:
                finished, waiting = await asyncio.wait(
                    waiting, timeout=0.2, return_when=asyncio.FIRST_COMPLETED
                )
                if cancelled():
                    break
                for future in finished:
                    handle = pending[future]
                    self._workspace_handles.discard(handle)
                    done += 1
                    if future.cancelled() or future.exception() is not None:
                        continue
                    result = future.result()
                    summary["modules"] += len(result.modules)
                    summary["failed"] += sum(m.status == "failed" for m in result.modules)
                    self.log_worker_output(result)
                    self.publish_workspace_result(handle.job.path, result, versions)
                    finished_results.append((handle.job.path, result))
                if finished and token is not None:
                    progress.report(
                        token,
                        types.WorkDoneProgressReport(
                            message=f"{done}/{len(files)} files",
                            percentage=int(100 * done / max(len(files), 1)),
                        ),
                    )
                self.send_status()
            # A file published before the roots that build its classes: now it gets them.
            for path, result in finished_results:
                if self.with_parent_verdicts(result) is not result:
                    self.publish_workspace_result(path, result, versions)
        finally:
            for handle in handles:
                if not handle.future.done():
                    handle.cancel()
                self._workspace_handles.discard(handle)
            self.send_status()
            if token is not None:
                outcome = "cancelled" if done < len(files) else "done"
                self.protocol.cancelled_requests.discard(request_id)
                progress.end(
                    token,
                    types.WorkDoneProgressEnd(
                        message=(
                            f"{outcome}: {summary['modules']} modules, {summary['failed']} failed"
                        )
                    ),
                )
        return summary

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

    def with_parent_verdicts(self, result: FileResult) -> FileResult:
        """The result with the verdicts of instances that traced roots built (remembering
        this result's own derived verdicts for other files)."""
        if result.derived_modules:
            self.parent_results[result.path] = result
        else:
            self.parent_results.pop(result.path, None)
        others = [r for path, r in self.parent_results.items() if path != result.path]
        return apply_parent_arguments([result, *others])[0]

    def publish_workspace_result(
        self, path: str, result: FileResult, versions: dict[str, int]
    ) -> None:
        """A workspace trace's result, traced with the open buffers at ``versions``: adopted
        for an open document if its text is unchanged since; else dropped (its lines no
        longer match) and the document traced again."""
        result = self.with_parent_verdicts(result)
        document = self.documents.get(path)
        if document is None:
            uri = diagnostics.path_to_uri(path)
            entries = diagnostics.build(
                path, result, [], self.lines_of, self.options_for(path), self.encoding
            )
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=[e.diagnostic for e in entries])
            )
            return
        if document.handle is not None or document.timer is not None:
            return  # a trace of the current text is on its way
        if versions.get(path) != document.version:
            self.schedule(document)
            return
        document.result = result
        document.result_version = document.version
        document.overlay_versions = versions
        self.publish(document)


server = FxLanguageServer()


# -- lifecycle ----------------------------------------------------------------------------------


@server.feature(types.INITIALIZE)
@guarded()
def initialize(ls: FxLanguageServer, params: types.InitializeParams) -> None:
    ls.apply_settings(params.initialization_options)


@server.feature(types.INITIALIZED)
async def initialized(ls: FxLanguageServer, params: types.InitializedParams) -> None:
    try:
        if ls.process_id is not None:
            ls.watcher = asyncio.ensure_future(ls.watch_client(ls.process_id))
        if ls.options.trusted:
            ls.ensure_engine()
        else:
            ls.report_once([UNTRUSTED_MESSAGE], types.MessageType.Info)
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
                                ]
                            ),
                        )
                    ]
                )
            )
    except Exception:
        logger.exception("fx-lsp: initialized failed")


@server.feature(types.SHUTDOWN)
@guarded()
def shutdown(ls: FxLanguageServer, params: None) -> None:
    for document in ls.documents.values():
        ls.outdate(document)
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
    was_trusted, before = ls.options.trusted, ls.options
    ls.apply_settings(params.settings)
    if ls.options.trusted != was_trusted:
        ls.set_trusted(ls.options.trusted)
    elif ls.options != before and ls.options.trusted:
        ls.retrace_all()


# -- documents ----------------------------------------------------------------------------------


def _is_pyproject(path: str) -> bool:
    return os.path.basename(path) == "pyproject.toml"


def _config_changed(ls: FxLanguageServer, path: str) -> None:
    root = os.path.dirname(path)
    ls.forget_config(root)
    for document in ls.documents.values():
        if ls.root_of(document.path) == root:
            ls.schedule(document)


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
@guarded()
def did_open(ls: FxLanguageServer, params: types.DidOpenTextDocumentParams) -> None:
    item = params.text_document
    path = to_fs_path(item.uri)
    if path is None or not (item.language_id == "python" or path.endswith((".py", ".pyi"))):
        return
    document = Document(uri=item.uri, path=path, version=item.version)
    ls.documents[path] = document
    ls.schedule(document)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
@guarded()
def did_change(ls: FxLanguageServer, params: types.DidChangeTextDocumentParams) -> None:
    path = to_fs_path(params.text_document.uri)
    if path is not None and _is_pyproject(path):
        ls.forget_config(os.path.dirname(path))  # the next trace reads the edited buffer
        return
    document = ls.documents.get(path or "")
    if document is None:
        return
    document.version = params.text_document.version
    if ls.options_for(path).run == "onType":
        ls.trace_with_dependents(document, ls.options_for(path).debounce_ms / 1000)
    else:
        ls.outdate(document)
        ls.send_status()


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
@guarded()
def did_save(ls: FxLanguageServer, params: types.DidSaveTextDocumentParams) -> None:
    path = to_fs_path(params.text_document.uri) or ""
    if _is_pyproject(path):
        _config_changed(ls, path)
        return
    document = ls.documents.get(path)
    if document is not None:
        ls.trace_with_dependents(document, 0.0)
    else:
        for dependent in ls.dependents(path):
            ls.schedule(dependent)


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
@guarded()
def did_close(ls: FxLanguageServer, params: types.DidCloseTextDocumentParams) -> None:
    path = to_fs_path(params.text_document.uri) or ""
    if _is_pyproject(path):
        ls.forget_config(os.path.dirname(path))  # unsaved edits closed unsaved are gone
    document = ls.documents.pop(path, None)
    if document is None:
        return
    ls.outdate(document)
    ls.clear(document.uri)
    for other in ls.documents.values():
        if any(e.traced_path == path for e in other.entries):
            ls.publish(other)
    ls.send_status()


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
@guarded()
def did_change_watched_files(
    ls: FxLanguageServer, params: types.DidChangeWatchedFilesParams
) -> None:
    for change in params.changes:
        path = to_fs_path(change.uri) or ""
        if _is_pyproject(path):
            _config_changed(ls, path)
        elif path not in ls.documents:
            for dependent in ls.dependents(path):
                ls.schedule(dependent)


# -- requests -----------------------------------------------------------------------------------


def _document(ls: FxLanguageServer, uri: str) -> Document | None:
    return ls.documents.get(to_fs_path(uri) or "")


def _others(ls: FxLanguageServer, document: Document) -> list[FileResult]:
    return [d.result for d in ls.documents.values() if d is not document and d.result is not None]


@server.feature(types.TEXT_DOCUMENT_HOVER)
@guarded_async()
async def on_hover(ls: FxLanguageServer, params: types.HoverParams) -> types.Hover | None:
    document = _document(ls, params.text_document.uri)
    if document is None:
        return None
    arguments = (
        document.path,
        params.position,
        ls.lines_of(document.path),
        ls.encoding,
        document.result,
        _others(ls, document),
        list(document.entries),
        lambda entry: [
            fix.title
            for fix in fix_plan.plan(
                entry.failure, entry.module, ls.text_of, ls.root_of, ls.parse_process.run
            )
        ],
    )
    if any(
        e.failure is not None and hover.contains(e.diagnostic.range, params.position)
        for e in document.entries
    ):
        # On a diagnostic the hover lists its quick fixes, which parses the file (cached per
        # text): in a thread, on a snapshot of the state, so a big file stalls no request.
        return await asyncio.to_thread(hover.hover, *arguments)
    return hover.hover(*arguments)


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix], resolve_provider=True
    ),
)
@guarded_async(default=[])
async def on_code_action(
    ls: FxLanguageServer, params: types.CodeActionParams
) -> list[types.CodeAction]:
    document = _document(ls, params.text_document.uri)
    if document is None:
        return []
    version = document.version

    def actions() -> list[types.CodeAction]:
        if document.version != version:
            return []  # typed over while queued: the client asks again for the new text
        return code_actions.code_actions(
            list(document.entries),
            params.context,
            params.range,
            ls.text_of,
            ls.version_of,
            ls.root_of,
            ls.encoding,
            resolve_data={"uri": document.uri} if ls.resolves_code_actions else None,
            run=ls.parse_process.run,
        )

    return await ls.off_loop(actions)


@server.feature(types.CODE_ACTION_RESOLVE)
@guarded_async()
async def on_code_action_resolve(
    ls: FxLanguageServer, action: types.CodeAction
) -> types.CodeAction:
    data = action.data
    uri = data.get("uri") if isinstance(data, dict) else getattr(data, "uri", None)
    document = _document(ls, uri) if isinstance(uri, str) else None
    if document is None:
        return action
    return await ls.off_loop(
        code_actions.resolve,
        action,
        list(document.entries),
        ls.text_of,
        ls.version_of,
        ls.root_of,
        ls.encoding,
        ls.parse_process.run,
    )


@server.feature(types.TEXT_DOCUMENT_CODE_LENS)
@guarded(default=[])
def on_code_lens(ls: FxLanguageServer, params: types.CodeLensParams) -> list[types.CodeLens]:
    document = _document(ls, params.text_document.uri)
    if document is None:
        return []
    return code_lens.code_lenses(
        document.uri, document.result, ls.lines_of(document.path), ls.encoding
    )


def _plain(value: Any) -> Any:
    """pygls hands custom methods their params as namedtuples: back to dicts."""
    if hasattr(value, "_asdict"):
        return {key: _plain(item) for key, item in value._asdict().items()}
    return value


@server.feature(GENERATED_CODE)
@guarded()
def on_generated_code(ls: FxLanguageServer, params: Any) -> dict[str, Any] | None:
    params = _plain(params)
    uri = params.get("uri") if isinstance(params, dict) else None
    document = _document(ls, uri) if isinstance(uri, str) else None
    if document is None:
        return None
    position = params.get("position")
    module = code_lens.find_module(
        document.result,
        ls.lines_of(document.path),
        ls.encoding,
        params.get("className"),
        types.Position(line=position["line"], character=position["character"])
        if isinstance(position, dict)
        else None,
    )
    return code_lens.generated_code(document.uri, module) if module is not None else None


@server.command(TRACE_WORKSPACE)
async def trace_workspace(ls: FxLanguageServer, *args: Any) -> dict[str, int]:
    try:
        return await ls.trace_workspace()
    except asyncio.CancelledError:
        raise
    except Exception:
        logger.exception("fx-lsp: tracing the workspace failed")
        return {"files": 0, "modules": 0, "failed": 0}


def serve(tcp: tuple[str, int] | None = None) -> None:
    """Run the server on stdio, or on ``tcp = (host, port)``; stop the engine on the way out."""
    logging.basicConfig(level=logging.WARNING)
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
