"""One child of the zygote running a job: forked, followed until it ends, and killed when a
class runs out of time, a message is refused or the job is cancelled. Its output goes to a
pipe drained here (keeping only the tail); its messages are decoded as data
(``fxcore.protocol.worker_messages``)."""

from __future__ import annotations

import multiprocessing.connection
import os
import signal
import time
from collections.abc import Callable
from concurrent.futures import CancelledError
from dataclasses import dataclass, field
from typing import Any

from fxcore.host.trace_handle import TraceHandle, VerdictListener
from fxcore.host.zygote_host import OUTPUT_LINE_CHARACTERS, ZygoteProcess
from fxcore.model.job_spec import TraceJob
from fxcore.model.results import FileResult, ModuleResult
from fxcore.model.timeout_scale import timeout_scale
from fxcore.protocol.worker_messages import (
    MAX_MESSAGE_BYTES,
    Classes,
    Derived,
    Deriving,
    Fatal,
    FileDone,
    InvalidResultData,
    Start,
    Verdict,
    decode_message,
)

#: How much of a child's output is kept (the tail).
OUTPUT_TAIL_BYTES = 64 * 1024
#: The least time a child gets to import the file before its first class starts.
IMPORT_TIMEOUT_SECONDS = 60.0
#: How often a job waiting for its child's output checks whether the child has exited.
_EXIT_POLL_SECONDS = 0.25
#: The most one read of a child's output takes.
_READ_BYTES = 1 << 16


@dataclass
class ChildAttempt:
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
    #: "timeout" or "crash" when the child did not finish on its own; "file-timeout" when
    #: the job's ``file-timeout`` ran out (then the classes not judged are not reached).
    ended_by: str | None = None
    exit_description: str = ""
    output: bytearray = field(default_factory=bytearray)
    #: Bytes of output dropped from the front of ``output`` (only its tail is kept).
    output_cut: int = 0


def run_child(handle: TraceHandle, job: TraceJob,
              live_zygote: Callable[[], ZygoteProcess]) -> ChildAttempt:
    """Fork one child of the zygote for ``job`` and follow it until it ends: what it
    reported, and how it ended when it did not finish on its own."""
    attempt = ChildAttempt()
    results_reader, results_writer = multiprocessing.connection.Pipe(duplex=False)
    output_reader, output_writer = os.pipe()
    try:
        try:
            zygote = live_zygote()
            pid = zygote.fork(job, [results_writer.fileno(), output_writer])
        finally:
            # The child has its own copies; ours would keep the pipes from closing.
            results_writer.close()
            os.close(output_writer)
        if not handle._attach((zygote, pid)):
            zygote.kill(pid)
            raise CancelledError()
        _follow_child(handle, job, zygote, pid, results_reader, output_reader, attempt)
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

def _follow_child(handle: TraceHandle, job: TraceJob, zygote: ZygoteProcess, pid: int,
                  results_reader: Any, output_reader: int, attempt: ChildAttempt) -> None:
    """Read a child's messages and output until it is done, killing it when the current
    class runs out of time. Done means the child reported its file result (or a fatal
    error), or both pipes closed, or it exited: a process it started may hold the pipes
    open for ever. Its exit after its last message is not waited for (a child of a zygote
    that holds torch took 30 to 80 ms to free its memory on a loaded 2-core machine, on the
    way of every result): the zygote reaps it. Its limits are in wall-clock time, scaled by
    ``FX_LSP_TIMEOUT_SCALE`` (``fxcore.model.timeout_scale``); the job's classes together have
    ``file-timeout`` from when its first child announced them (``handle.file_deadline``)."""
    scale = timeout_scale()
    timeout = job.config.timeout * scale
    # Importing a file that imports transformers or timm can take longer than tracing
    # one class; the import gets a larger budget, each class then its own `timeout`.
    import_limit = max(3 * timeout, IMPORT_TIMEOUT_SECONDS * scale)
    deadline = time.monotonic() + import_limit
    open_readers: list[Any] = [results_reader, output_reader]
    killed = False
    while open_readers:
        # Once killed, the child's pipes get their few seconds to close, file deadline or not.
        limit_at = deadline if killed or handle.file_deadline is None \
            else min(deadline, handle.file_deadline)
        # Wake at least every quarter second to notice that the child has exited.
        ready = multiprocessing.connection.wait(
            open_readers, timeout=min(_EXIT_POLL_SECONDS,
                                      max(0.0, limit_at - time.monotonic()))
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
                _read_output(output_reader, attempt)
            while results_reader in open_readers and results_reader.poll(0) \
                    and _read_message(results_reader, job, attempt, handle.listener):
                pass
            if attempt.rejected is not None:
                _stop_refused(zygote, pid, attempt)
            return
        if not ready and time.monotonic() < limit_at:
            continue
        if not ready:
            if killed:
                return  # killed, yet something (a grandchild) holds a pipe open
            zygote.kill(pid)
            killed = True
            if limit_at < deadline:
                attempt.ended_by = "file-timeout"
                attempt.exit_description = (f"took longer than {job.config.file_timeout * scale:g}"
                                            " s for the file's classes and was stopped")
            else:
                attempt.ended_by = "timeout"
                busy = attempt.current_class is not None or attempt.deriving is not None
                limit = timeout if busy else import_limit
                attempt.exit_description = f"took longer than {limit:g} s and was stopped"
            deadline = time.monotonic() + 5.0
            continue
        if output_reader in ready and not _read_output(output_reader, attempt):
            open_readers.remove(output_reader)
        if results_reader in ready:
            if not _read_message(results_reader, job, attempt, handle.listener):
                open_readers.remove(results_reader)
                if attempt.rejected is not None and not killed:
                    _stop_refused(zygote, pid, attempt)
                    killed = True
                    deadline = time.monotonic() + 5.0
            elif attempt.file is not None or attempt.fatal is not None:
                # Its last message: what it printed before is in the pipe already.
                _read_waiting_output(output_reader, attempt)
                return
            elif not killed:
                # Each class and each submodule instance has its own time; any message
                # after the import means the child is making progress.
                deadline = time.monotonic() + timeout
                if attempt.classes is not None and handle.file_deadline is None:
                    handle.file_deadline = time.monotonic() + job.config.file_timeout * scale

def _stop_refused(zygote: ZygoteProcess, pid: int, attempt: ChildAttempt) -> None:
    """A child that sent what no child of fx-lsp's sends is running someone else's
    protocol: stop it, and keep nothing it reported."""
    zygote.kill(pid)
    attempt.ended_by = "crash"
    attempt.exit_description = (f"sent data that is not a result of this job "
                                f"({attempt.rejected}) and was stopped")

def _read_waiting_output(reader: int, attempt: ChildAttempt) -> None:
    """Read what the output pipe holds, without waiting for more (a thread of the child's,
    or a process it started, may print on): at most one tail's worth beyond its size."""
    for _ in range(2 * OUTPUT_TAIL_BYTES // _READ_BYTES + 1):
        if not (multiprocessing.connection.wait([reader], timeout=0)
                and _read_output(reader, attempt)):
            return


def _read_output(reader: int, attempt: ChildAttempt) -> bool:
    try:
        data = os.read(reader, _READ_BYTES)
    except OSError:
        return False
    if not data:
        return False
    attempt.output += data
    if len(attempt.output) > 2 * OUTPUT_TAIL_BYTES:
        attempt.output_cut += len(attempt.output) - OUTPUT_TAIL_BYTES
        del attempt.output[:-OUTPUT_TAIL_BYTES]
    return True

def _read_message(reader: Any, job: TraceJob, attempt: ChildAttempt,
                  listener: VerdictListener | None = None) -> bool:
    """Take one message from the child; False when there are none left to read or the
    message was refused (``attempt.rejected``). ``listener`` (the job's) hears of its
    classes and verdicts as they come."""
    try:
        message = decode_message(reader.recv_bytes(MAX_MESSAGE_BYTES), job)
    except (EOFError, ConnectionError):
        return False
    except OSError as error:  # recv_bytes: longer than MAX_MESSAGE_BYTES
        attempt.rejected = f"a message too large to accept ({error})"
        return False
    except InvalidResultData as error:
        attempt.rejected = str(error)[:OUTPUT_LINE_CHARACTERS]
        return False
    match message:
        case Classes(names):
            attempt.classes = names
            if listener is not None:
                listener.announced(list(names))
        case Start(class_name):
            attempt.current_class = class_name
            attempt.deriving = None
        case Deriving(module):
            attempt.deriving = module
        case Derived(module):
            attempt.derived_modules.append(module)
            attempt.deriving = None
        case Verdict(module):
            attempt.modules.append(module)
            if listener is not None:
                listener.judged(module)
            reported = {done.mode for done in attempt.modules
                        if done.class_name == module.class_name}
            if reported >= set(job.config.modes):
                attempt.current_class = None
        case FileDone(result):
            attempt.file = result
        case Fatal(traceback):
            attempt.fatal = traceback
    return True


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
