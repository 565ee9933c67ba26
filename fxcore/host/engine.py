"""Runs trace jobs in worker processes so that user code never runs in the caller.

A zygote process (``fxcore.host.zygote``) imports torch once; each job is a child forked from
it, which costs tens of milliseconds instead of the seconds a fresh interpreter needs to
import torch. A child may hang, crash, print without end, call ``os._exit`` or allocate
without bound: its output goes to a pipe the engine drains (keeping only the tail), its
address space is capped, and it is killed when a class takes longer than the time-out. The
classes it did not get to are traced in a new child, so one bad class costs only its own
result.

What the zygote and the children print (torch's warnings on import, a library's deprecation
warnings, the workspace's own prints and warnings) never reaches the caller's terminal: it is
logged to ``WORKER_LOG``, the zygote's lines at INFO (the server writes them to its log) and
each file's output at DEBUG (the CLI's ``--verbose`` shows both; the server logs a file's
output only when its worker timed out or crashed, as part of the reason).
"""

from __future__ import annotations

import dataclasses
import multiprocessing.connection
import os
import signal
import threading
import time
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from fxcore.host.cache import ResultCache
from fxcore.host.installed_packages import preloadable
from fxcore.host.worker_environment import passed_variables
from fxcore.host.zygote_host import (
    OUTPUT_LINE_CHARACTERS,
    OUTPUT_TAIL_LINES,
    WORKER_LOG,
    ZygoteProcess,
)
from fxcore.model.job_spec import MAX_OTHER_CALL_SITES, TraceJob
from fxcore.model.results import CODES, Failure, FileResult, ModuleResult, Range
from fxcore.protocol.worker_messages import MAX_MESSAGE_BYTES, InvalidResultData, decode_message
from fxcore.workspace.builders import builder_functions
from fxcore.workspace.call_sites import CallSiteIndexes
from fxcore.workspace.discovery import ParsedFile, has_module_level_class, parsed_file
from fxcore.workspace.notebook import explain_dropped_names, is_notebook
from fxcore.workspace.paths import import_location, notebook_module

#: How much of a child's output is kept (the tail).
OUTPUT_TAIL_BYTES = 64 * 1024
#: The least time a child gets to import the file before its first class starts.
IMPORT_TIMEOUT_SECONDS = 60.0
#: How often a job waiting for its child's output checks whether the child has exited.
_EXIT_POLL_SECONDS = 0.25


@dataclass
class _Attempt:
    """What one child reported before it ended."""

    classes: list[str] | None = None
    current_class: str | None = None
    modules: list[ModuleResult] = field(default_factory=list)
    #: The submodule instance of a finished root being traced (its verdict-less result).
    deriving: ModuleResult | None = None
    derived_modules: list[ModuleResult] = field(default_factory=list)
    file: FileResult | None = None
    fatal: str | None = None
    #: Why a message from the child was refused (then the child is stopped and what it
    #: reported is discarded: workspace code may have written it).
    rejected: str | None = None
    #: "timeout" or "crash" when the child did not finish on its own.
    ended_by: str | None = None
    exit_description: str = ""
    output: bytearray = field(default_factory=bytearray)
    #: Bytes of output dropped from the front of ``output`` (only its tail is kept).
    output_cut: int = 0


@dataclass
class WorkspaceKnowledge:
    """What jobs are looked up in before and after they run: the results cache (``None``:
    none) and the index of each workspace's constructor calls. The server keeps one for its
    life; each ``fx-lsp check`` run has its own, so that one engine can serve several runs."""

    cache: ResultCache | None = None
    call_sites: CallSiteIndexes = field(default_factory=CallSiteIndexes)


class TraceHandle:
    """A submitted job: its future result, and a way to stop it."""

    def __init__(self, job: TraceJob, knowledge: WorkspaceKnowledge) -> None:
        self.job = job
        self.knowledge = knowledge
        self.future: Future[FileResult] = Future()
        self._lock = threading.Lock()
        self._cancelled = False
        self._running: tuple[ZygoteProcess, int] | None = None

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        """Stop the job: kill its child if it runs. Its future then raises
        ``CancelledError``."""
        with self._lock:
            self._cancelled = True
            running = self._running
        if not self.future.cancel() and running is not None:
            zygote, pid = running
            zygote.kill(pid)

    def _attach(self, zygote: ZygoteProcess, pid: int) -> bool:
        with self._lock:
            self._running = (zygote, pid)
            return not self._cancelled


class Engine:
    """Runs ``TraceJob``s on up to ``workers`` children at a time."""

    def __init__(self, workers: int | None = None, cache: ResultCache | None = None) -> None:
        self.workers = workers or os.cpu_count() or 1
        #: What a job submitted without its own ``WorkspaceKnowledge`` is looked up in:
        #: results of unchanged files are taken from its cache, without starting a child.
        self.knowledge = WorkspaceKnowledge(cache)
        self._executor = ThreadPoolExecutor(max_workers=self.workers,
                                            thread_name_prefix="fx-lsp-job")
        self._handles: set[TraceHandle] = set()
        self._lock = threading.Lock()
        self._zygote: ZygoteProcess | None = None
        self._closed = False
        self._preloaded: set[str] = set()

    def _live_zygote(self) -> ZygoteProcess:
        with self._lock:
            if self._closed:
                raise CancelledError()
            if self._zygote is None or not self._zygote.alive:
                self._zygote = ZygoteProcess()
            return self._zygote

    @property
    def call_sites(self) -> CallSiteIndexes:
        """The default knowledge's call-site indexes, built once per workspace root; the
        server passes its file events on to them."""
        return self.knowledge.call_sites

    def warm_up(self) -> None:
        """Start the zygote (and its torch import) now rather than on the first job."""
        self._live_zygote()

    def submit(self, job: TraceJob, knowledge: WorkspaceKnowledge | None = None) -> TraceHandle:
        if self._closed:
            raise RuntimeError("the engine is closed")
        # The child runs in another working folder: it must get absolute paths.
        job = dataclasses.replace(
            job, path=os.path.abspath(job.path),
            workspace_root=os.path.abspath(job.workspace_root),
            overlays={os.path.abspath(path): text for path, text in job.overlays.items()},
        )
        handle = TraceHandle(job, knowledge or self.knowledge)
        with self._lock:
            self._handles.add(handle)

        def forget(_future: Future[FileResult]) -> None:
            with self._lock:
                self._handles.discard(handle)

        handle.future.add_done_callback(forget)
        self._executor.submit(self._run, handle)
        return handle

    def check(self, job: TraceJob) -> FileResult:
        return self.submit(job).future.result()

    def close(self) -> None:
        """Kill every running child and stop the zygote."""
        with self._lock:
            self._closed = True
            handles = list(self._handles)
            zygote, self._zygote = self._zygote, None
        for handle in handles:
            handle.cancel()
        # The zygote first: on its socket's end it kills every child, and a job waiting for
        # it to start or to fork then stops waiting, so the threads below end at once.
        if zygote is not None:
            zygote.close()
        self._executor.shutdown(wait=True, cancel_futures=True)

    # -- running a job ---------------------------------------------------------------------

    def _run(self, handle: TraceHandle) -> None:
        if not handle.future.set_running_or_notify_cancel():
            return
        try:
            # The host reads and parses the file once per job, for all its uses here.
            parsed = parsed_file(handle.job.path, handle.job.overlays)
            cache = handle.knowledge.cache
            handle.job = _with_call_sites(handle.job, parsed, handle.knowledge.call_sites)
            handle.job = _with_builders(handle.job, parsed)
            result = cache.get(handle.job) if cache else None
            if result is None:
                # The key from the text before the run: the text that is imported.
                key = cache.key(handle.job) if cache else None
                # Importing runs the file: a script with no module-level class (train.py)
                # is never run.
                result = self._run_job(handle, parsed) if _may_define_a_module_class(parsed) \
                    else FileResult(path=os.path.abspath(handle.job.path))
                _explain_notebook_names(handle.job, result)
                _log_file_output(result)
                self._preload(result.third_party_packages)
                if cache:
                    cache.put(handle.job, result, key)
        except BaseException as error:  # the engine must always answer, cancelled or not
            handle.future.set_exception(error)
        else:
            handle.future.set_result(result)

    def _preload(self, packages: list[str]) -> None:
        """Have the zygote import installed packages a job needed (timm, transformers,
        einops), so later children start with them instead of importing them again. The
        names come from a worker (or a cache entry): only those that installed distributions
        provide from site-packages are imported."""
        if os.environ.get("FX_LSP_NO_PRELOAD") == "1":
            return
        with self._lock:
            wanted = set(packages) - self._preloaded
        new = preloadable(wanted) if wanted else []
        with self._lock:
            # Asked for once each, allowed or not: the answer does not change in a process.
            self._preloaded.update(wanted)
            zygote = self._zygote
        if new and zygote is not None:
            zygote.preload(new)

    def _run_job(self, handle: TraceHandle, parsed: ParsedFile) -> FileResult:
        # Read when the job runs, and kept out of its cache key: values may be secrets.
        job: TraceJob = dataclasses.replace(
            handle.job, environment=passed_variables(handle.job.config.pass_env, os.environ))
        started = time.perf_counter()
        result = FileResult(path=os.path.abspath(job.path))
        #: Classes the children announced, and the (class, mode) pairs that got a verdict:
        #: each class gets one verdict per configured mode.
        announced: list[str] = []
        done: set[tuple[str, str]] = set()
        modes = job.config.modes
        only = list(job.only_classes)
        output = bytearray()
        output_cut = 0
        while True:
            attempt = self._run_child(handle, dataclasses.replace(job, only_classes=only))
            output += attempt.output
            output_cut += attempt.output_cut
            announced.extend(name for name in attempt.classes or [] if name not in announced)
            if attempt.rejected is not None:
                result.errors.append(self._file_failure(
                    job, "crash", f"The worker {attempt.exit_description}: nothing it "
                    f"reported for this file is used.{_last_output(attempt.output)}"))
                break
            for module in attempt.modules:
                if (module.class_name, module.mode) not in done:
                    result.modules.append(module)
                    done.add((module.class_name, module.mode))
            result.derived_modules.extend(attempt.derived_modules)
            if attempt.file is not None:
                result.errors.extend(attempt.file.errors)
                result.imported_files = attempt.file.imported_files
                result.third_party_packages = attempt.file.third_party_packages
                result.imported_hashes = attempt.file.imported_hashes
                result.missing_modules = attempt.file.missing_modules
                result.failed_assignments = attempt.file.failed_assignments
            if attempt.fatal is not None:
                result.errors.append(self._file_failure(job, "error",
                                                        f"The worker failed: {attempt.fatal}"))
            if attempt.ended_by is None:
                break
            if attempt.classes is None:
                message = (f"The worker {attempt.exit_description} while importing this file."
                           f"{_last_output(attempt.output)}")
                result.errors.append(self._file_failure(job, attempt.ended_by, message))
                break
            if attempt.current_class is not None:
                self._end_class(job, parsed, attempt.current_class, attempt, result, done)
            elif attempt.deriving is not None:
                # Only a submodule instance of a finished root ran out of time or crashed:
                # that is its verdict, and the file's remaining classes run in a new child.
                result.derived_modules.append(self._ended_derived(attempt, attempt.deriving))
            elif not attempt.modules:
                # Stopped between classes without a verdict: the next class is the one that
                # pays, so that each new child makes progress.
                stalled = next((name for name in announced
                                if any((name, mode) not in done for mode in modes)), None)
                if stalled is not None:
                    self._end_class(job, parsed, stalled, attempt, result, done)
            only = [name for name in announced
                    if any((name, mode) not in done for mode in modes)]
            if not only:
                break
        # A class that was announced always gets a verdict per mode, whatever its child did.
        for name in announced:
            self._end_class(job, parsed, name, attempt, result, done)
        result.output = _output_tail(output, output_cut)
        result.seconds = time.perf_counter() - started
        return result

    def _run_child(self, handle: TraceHandle, job: TraceJob) -> _Attempt:
        attempt = _Attempt()
        results_reader, results_writer = multiprocessing.connection.Pipe(duplex=False)
        output_reader, output_writer = os.pipe()
        try:
            try:
                zygote = self._live_zygote()
                pid = zygote.fork(job, [results_writer.fileno(), output_writer])
            finally:
                # The child has its own copies; ours would keep the pipes from closing.
                results_writer.close()
                os.close(output_writer)
            if not handle._attach(zygote, pid):
                zygote.kill(pid)
                raise CancelledError()
            self._follow_child(handle, job, zygote, pid, results_reader, output_reader, attempt)
        finally:
            results_reader.close()
            os.close(output_reader)
        if handle.cancelled:
            raise CancelledError()
        finished = attempt.file is not None or attempt.fatal is not None
        if attempt.ended_by is None and not finished:
            attempt.ended_by = "crash"
            attempt.exit_description = _describe_exit(zygote.exit_code(pid, timeout=5.0))
        else:
            zygote.forget_exit(pid)
        return attempt

    def _follow_child(self, handle: TraceHandle, job: TraceJob, zygote: ZygoteProcess, pid: int,
                      results_reader: Any, output_reader: int, attempt: _Attempt) -> None:
        """Read a child's messages and output until it is done, killing it when the current
        class runs out of time. Done means both pipes closed, or the child reported its
        file result or exited: a process it started may hold the pipes open for ever."""
        timeout = job.config.timeout
        # Importing a file that imports transformers or timm can take longer than tracing
        # one class; the import gets a larger budget, each class then its own `timeout`.
        deadline = time.monotonic() + max(3 * timeout, IMPORT_TIMEOUT_SECONDS)
        open_readers: list[Any] = [results_reader, output_reader]
        killed = False
        while open_readers:
            # Wake at least every quarter second to notice that the child has exited.
            ready = multiprocessing.connection.wait(
                open_readers, timeout=min(_EXIT_POLL_SECONDS,
                                          max(0.0, deadline - time.monotonic()))
            )
            if handle.cancelled and not killed:
                zygote.kill(pid)
                killed = True
            if results_reader not in ready and (attempt.file is not None
                                                or attempt.fatal is not None
                                                or zygote.has_exited(pid)):
                # Nothing left from the child itself; what still holds the output pipe is
                # something it started, which the zygote kills. A child that reported and
                # exited since `wait` returned left its last messages in the pipe: read them.
                if output_reader in ready:
                    self._read_output(output_reader, attempt)
                while results_reader in open_readers and results_reader.poll(0) \
                        and self._read_message(results_reader, job, attempt):
                    pass
                if attempt.rejected is not None:
                    self._stop_refused(zygote, pid, attempt)
                return
            if not ready and time.monotonic() < deadline:
                continue
            if not ready:
                if killed:
                    return  # killed, yet something (a grandchild) holds a pipe open
                zygote.kill(pid)
                killed = True
                attempt.ended_by = "timeout"
                busy = attempt.current_class is not None or attempt.deriving is not None
                limit = timeout if busy else max(3 * timeout, IMPORT_TIMEOUT_SECONDS)
                attempt.exit_description = f"took longer than {limit:g} s and was stopped"
                deadline = time.monotonic() + 5.0
                continue
            if output_reader in ready and not self._read_output(output_reader, attempt):
                open_readers.remove(output_reader)
            if results_reader in ready:
                if not self._read_message(results_reader, job, attempt):
                    open_readers.remove(results_reader)
                    if attempt.rejected is not None and not killed:
                        self._stop_refused(zygote, pid, attempt)
                        killed = True
                        deadline = time.monotonic() + 5.0
                elif not killed:
                    # Each class and each submodule instance has its own time; any message
                    # after the import means the child is making progress.
                    deadline = time.monotonic() + timeout

    @staticmethod
    def _stop_refused(zygote: ZygoteProcess, pid: int, attempt: _Attempt) -> None:
        """A child that sent what no child of fx-lsp's sends is running someone else's
        protocol: stop it, and keep nothing it reported."""
        zygote.kill(pid)
        attempt.ended_by = "crash"
        attempt.exit_description = (f"sent data that is not a result of this job "
                                    f"({attempt.rejected}) and was stopped")

    @staticmethod
    def _read_output(reader: int, attempt: _Attempt) -> bool:
        try:
            data = os.read(reader, 1 << 16)
        except OSError:
            return False
        if not data:
            return False
        attempt.output += data
        if len(attempt.output) > 2 * OUTPUT_TAIL_BYTES:
            attempt.output_cut += len(attempt.output) - OUTPUT_TAIL_BYTES
            del attempt.output[:-OUTPUT_TAIL_BYTES]
        return True

    @staticmethod
    def _read_message(reader: Any, job: TraceJob, attempt: _Attempt) -> bool:
        """Take one message from the child; False when there are none left to read or the
        message was refused (``attempt.rejected``)."""
        try:
            kind, payload = decode_message(reader.recv_bytes(MAX_MESSAGE_BYTES), job)
        except (EOFError, ConnectionError):
            return False
        except OSError as error:  # recv_bytes: longer than MAX_MESSAGE_BYTES
            attempt.rejected = f"a message too large to accept ({error})"
            return False
        except InvalidResultData as error:
            attempt.rejected = str(error)[:OUTPUT_LINE_CHARACTERS]
            return False
        if kind == "classes":
            attempt.classes = payload
        elif kind == "start":
            attempt.current_class = payload
            attempt.deriving = None
        elif kind == "deriving":
            attempt.deriving = payload
        elif kind == "derived":
            attempt.derived_modules.append(payload)
            attempt.deriving = None
        elif kind == "module":
            attempt.modules.append(payload)
            reported = {module.mode for module in attempt.modules
                        if module.class_name == payload.class_name}
            if reported >= set(job.config.modes):
                attempt.current_class = None
        elif kind == "file":
            attempt.file = payload
        elif kind == "fatal":
            attempt.fatal = payload
        return True

    # -- results for children that did not finish -------------------------------------------

    def _file_failure(self, job: TraceJob, kind: str, message: str) -> Failure:
        return Failure(code=CODES[kind], kind=kind, message=message,
                       **Range(1, 1, 1, 1).at(os.path.abspath(job.path)))

    def _end_class(self, job: TraceJob, parsed: ParsedFile, name: str, attempt: _Attempt,
                   result: FileResult, done: set[tuple[str, str]]) -> None:
        """Give ``name`` the verdict of a child that ended, in each mode it has none of."""
        for mode in job.config.modes:
            if (name, mode) not in done:
                result.modules.append(self._ended_module(job, parsed, name, mode, attempt))
                done.add((name, mode))

    def _ended_module(self, job: TraceJob, parsed: ParsedFile, name: str, mode: str,
                      attempt: _Attempt) -> ModuleResult:
        path = os.path.abspath(job.path)
        source = parsed.classes.get(name)
        span = (source.name_span if source else Range(1, 1, 1, 1)).at(path)
        kind = attempt.ended_by or "crash"
        advice = (
            "Raise the time-out with `timeout` under [tool.fx-lsp] if the model is just large."
            if kind == "timeout"
            else "Run its constructor and forward in a plain Python process to see why."
        )
        failure = Failure(
            code=CODES[kind], kind=kind,
            message=f"Tracing {name} stopped: the worker "
            f"{attempt.exit_description or 'ended without a verdict for it'}. {advice}"
            f"{_last_output(attempt.output)}",
            **span,
        )
        return ModuleResult(
            **span, class_name=name,
            qualified_name=f"{import_location(path).module_name}:{name}",
            status="failed", forward=source.forward if source else None, failures=[failure],
            mode=mode,
        )

    @staticmethod
    def _ended_derived(attempt: _Attempt, module: ModuleResult) -> ModuleResult:
        kind = attempt.ended_by or "crash"
        arguments = module.arguments
        built_by = f"{arguments.parent} -> {arguments.path}" if arguments else "its parent"
        module.failures = [Failure(
            code=CODES[kind], kind=kind,
            message=f"Tracing {module.class_name} as built by {built_by} stopped: the worker "
            f"{attempt.exit_description}.{_last_output(attempt.output)}",
            **module.span(),
        )]
        return module


def _with_call_sites(job: TraceJob, parsed: ParsedFile,
                     call_sites: CallSiteIndexes) -> TraceJob:
    """The job with the workspace's literal constructor calls of its classes."""
    if not parsed.classes:
        return job
    found = call_sites.calls(job.workspace_root, parsed.classes, 1 + MAX_OTHER_CALL_SITES)
    if not found:
        return job
    return dataclasses.replace(
        job, call_sites={name: sites[0] for name, sites in found.items()},
        other_call_sites={name: sites[1:] for name, sites in found.items()
                          if len(sites) > 1})


def _with_builders(job: TraceJob, parsed: ParsedFile) -> TraceJob:
    """The job with the builder functions of its classes (``fxcore.workspace.builders``). They come
    from the file's own text, which the cache key already holds."""
    if parsed.tree is None or not parsed.classes:
        return job
    found = builder_functions(parsed.tree, parsed.classes)
    return dataclasses.replace(job, builders=found) if found else job


def _explain_notebook_names(job: TraceJob, result: FileResult) -> None:
    """In a notebook's result, say which left-out cell defines a name a class missed."""
    if not is_notebook(job.path):
        return
    module = notebook_module(job.path, job.overlays)
    if module is not None:
        explain_dropped_names(result, module)


def _may_define_a_module_class(parsed: ParsedFile) -> bool:
    """False only for a file that parses and has no module-level ``class``
    (``fxcore.workspace.discovery.has_module_level_class``)."""
    # An unreadable file or a syntax error: the worker says why, without importing.
    return parsed.tree is None or has_module_level_class(parsed.tree)


def _output_tail(output: bytearray, cut_before: int) -> str:
    """The last ``OUTPUT_TAIL_BYTES`` of what a job's children printed, behind a line saying
    how much was cut before them when anything was."""
    if not cut_before and len(output) <= OUTPUT_TAIL_BYTES:
        return output.decode("utf-8", errors="replace")
    marker = "… [{:,} earlier bytes of output cut by fx-lsp]\n"
    kept = OUTPUT_TAIL_BYTES - len(marker.format(cut_before + len(output)).encode())
    cut = cut_before + max(0, len(output) - kept)
    return marker.format(cut) + output[-kept:].decode("utf-8", errors="replace")


def _log_file_output(result: FileResult) -> None:
    """What the children of a job printed, as one record: the file's prints and warnings, each
    line behind a ``|`` (a CI log takes a line that starts with ``::`` as a command)."""
    text = result.output.rstrip()
    if text:
        lines = "\n".join(f"  | {line}" for line in text.splitlines())
        WORKER_LOG.debug("fx-lsp worker: %s printed:\n%s", result.path, lines)


def _last_output(output: bytes, lines: int = OUTPUT_TAIL_LINES) -> str:
    """The last lines the worker printed, as a message's last part ("" when it printed
    nothing): often the clue to a time-out or a crash (a progress line, a warning, a C++
    assertion)."""
    text = output[-OUTPUT_TAIL_BYTES:].decode("utf-8", errors="replace").rstrip()
    if not text:
        return ""
    tail = [line[:OUTPUT_LINE_CHARACTERS] for line in text.splitlines()[-lines:]]
    return "\nLast output of the worker:\n" + "\n".join(f"    {line}" for line in tail)


def _describe_exit(exitcode: int | None) -> str:
    if exitcode is None:
        return "did not exit"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"crashed ({name})"
    return f"exited with status {exitcode}"
