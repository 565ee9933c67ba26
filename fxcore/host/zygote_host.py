"""The host's end of the zygote (``fxcore.host.zygote``): the process that imports torch once and
forks a child per job. ``ZygoteProcess`` starts it in a neutral working folder with the
allowlisted environment, asks it to fork, kill and preload, reaps its children's exit codes,
and logs what it prints (``WORKER_LOG``, each line cut to a bound); ``ZygoteError`` says it
died or did not answer."""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

from fxcore.host.cache import KEY_VARIABLE
from fxcore.host.worker_environment import zygote_environment
from fxcore.host.zygote import STOPPED_STATES, process_state, receive_report, send_request
from fxcore.model.job_spec import TraceJob
from fxcore.protocol.result_codec import MAX_TEXT_CHARACTERS

#: How many of its last lines (cut to how many characters) a message about a dead zygote or
#: a stopped child quotes.
OUTPUT_TAIL_LINES = 5
OUTPUT_LINE_CHARACTERS = 200

#: How long the zygote may take to import torch before the engine gives up on it.
ZYGOTE_START_SECONDS = 120.0

#: How often a wait on the zygote looks whether it was stopped (``_resume_if_stopped``).
_STOP_CHECK_SECONDS = 1.0

#: How long a dead zygote's last output may take to arrive, to be quoted in the error.
_LAST_OUTPUT_SECONDS = 5.0

#: What workers print: each line the zygote prints (INFO), and each file's output of a job
#: that ran (DEBUG).
WORKER_LOG = logging.getLogger("fxcore.workers")

#: The zygote's working folder: nothing there is importable under a module's name.
_NEUTRAL_FOLDER = "/" if os.name == "posix" else os.path.abspath(os.sep)

class ZygoteError(RuntimeError):
    """The zygote process died or did not answer."""

class ZygoteProcess:
    """The engine's side of one ``fxcore.host.zygote`` process."""

    def __init__(self) -> None:
        engine_end, zygote_end = socket.socketpair()
        package_parent = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
        # Not the caller's whole environment: workspace code runs in the zygote's children.
        environment = zygote_environment(os.environ)
        # Only absolute PYTHONPATH entries: a relative or empty one would mean the caller's
        # current folder, whose files must never shadow a module the zygote imports.
        environment["PYTHONPATH"] = os.pathsep.join(
            entry for entry in [package_parent,
                                *environment.get("PYTHONPATH", "").split(os.pathsep)]
            if os.path.isabs(entry)
        )
        environment["PYTHONSAFEPATH"] = "1"  # Python 3.11+: no script folder on sys.path
        # Workspace code has no business with the key that signs cache entries.
        environment.pop(KEY_VARIABLE, None)
        output_reader, output_writer = os.pipe()
        self._process = subprocess.Popen(
            # `-c` with a neutral working folder rather than `-m` from the caller's folder:
            # on Python 3.10 `-m` puts the current folder first on sys.path, so a
            # workspace's `random.py` would run inside the zygote.
            [sys.executable, "-c", "import fxcore.host.zygote; fxcore.host.zygote.main()",
             str(zygote_end.fileno())],
            cwd=_NEUTRAL_FOLDER,
            pass_fds=[zygote_end.fileno()],
            stdin=subprocess.DEVNULL,
            # Never the caller's stdout (it may be a protocol) nor its stderr (the user's
            # terminal, where torch's import warnings have no business): a pipe to the log.
            stdout=output_writer,
            stderr=output_writer,
            env=environment,
            start_new_session=True,  # a terminal's Ctrl+C goes to the caller, which cleans up
        )
        zygote_end.close()
        os.close(output_writer)
        #: The last lines the zygote printed: why it died, when it does.
        self._last_lines: deque[str] = deque(maxlen=OUTPUT_TAIL_LINES)
        self._output_logger = threading.Thread(target=self._log_output, args=(output_reader,),
                                               name="fx-lsp-zygote-output", daemon=True)
        self._output_logger.start()
        self._socket = engine_end
        self._send_lock = threading.Lock()
        self._state = threading.Condition()
        self._ready = False
        self._dead = False
        self._forked: dict[int, int] = {}
        self._exit_codes: dict[int, int] = {}
        self._ignored_exits: set[int] = set()
        #: The capture modes this zygote was asked to warm up.
        self._warmed: set[str] = set()
        self._request_ids = itertools.count()
        threading.Thread(target=self._read, name="fx-lsp-zygote", daemon=True).start()

    @property
    def alive(self) -> bool:
        return not self._dead

    def _log_output(self, reader: int) -> None:
        """Drain what the zygote prints (a zygote blocked on a full pipe would hang every
        job) into the log, until every copy of the pipe is closed."""
        with open(reader, "rb") as stream:
            for raw, cut in bounded_lines(stream, MAX_TEXT_CHARACTERS):
                line = raw.decode("utf-8", errors="replace").rstrip()
                if cut:
                    line += f"… [{cut:,} more bytes cut by fx-lsp]"
                if line:
                    self._last_lines.append(line[:OUTPUT_LINE_CHARACTERS])
                    WORKER_LOG.info("fx-lsp worker: %s", line)

    def _not_started(self) -> ZygoteError:
        """The zygote died or hung before it was ready: the error quotes its last line (an
        import that failed, usually)."""
        message = "the worker process that loads torch did not start"
        if self._dead:
            self._output_logger.join(_LAST_OUTPUT_SECONDS)
            if self._last_lines:
                message += f": {self._last_lines[-1]}"
        return ZygoteError(message)

    def _read(self) -> None:
        try:
            while True:
                message = receive_report(self._socket)
                with self._state:
                    if message[0] == "ready":
                        self._ready = True
                    elif message[0] == "forked":
                        self._forked[message[1]] = message[2]
                    elif message[0] == "exited":
                        if message[1] in self._ignored_exits:
                            self._ignored_exits.discard(message[1])
                        else:
                            self._exit_codes[message[1]] = message[2]
                    self._state.notify_all()
        except (EOFError, OSError):  # ConnectionError included: a report of another shape
            with self._state:
                self._dead = True
                self._state.notify_all()

    def _wait_for(self, predicate: Callable[[], bool], timeout: float) -> bool:
        """Wait until ``predicate`` holds, the zygote is dead or ``timeout`` has passed,
        resuming a zygote that was stopped meanwhile (``_resume_if_stopped``)."""
        deadline = time.monotonic() + timeout
        with self._state:
            while True:
                left = deadline - time.monotonic()
                if self._state.wait_for(lambda: predicate() or self._dead,
                                        timeout=min(max(left, 0.0), _STOP_CHECK_SECONDS)):
                    return predicate()
                if left <= _STOP_CHECK_SECONDS:
                    return False
                self._resume_if_stopped()

    def _resume_if_stopped(self) -> None:
        """Continue the zygote where a job stopped it (``os.kill(os.getppid(), SIGSTOP)`` in
        user code reaches the zygote, its parent): a stopped zygote forks nothing and reports
        no exit, and every later job would wait for it."""
        if process_state(self._process.pid) in STOPPED_STATES:
            WORKER_LOG.warning("fx-lsp: the worker process was stopped (by a job's code, "
                               "most likely); it is continued")
            with contextlib.suppress(OSError):
                os.kill(self._process.pid, signal.SIGCONT)

    def fork(self, job: TraceJob, fds: list[int]) -> int:
        if not self._wait_for(lambda: self._ready, ZYGOTE_START_SECONDS):
            raise self._not_started()
        self._warm(job.config.modes)
        request_id = next(self._request_ids)
        with self._send_lock:
            send_request(self._socket, ("fork", request_id, job, job.config.memory_limit_mb),
                         fds)
        if not self._wait_for(lambda: request_id in self._forked, 30.0):
            raise ZygoteError("the worker process did not fork a job")
        with self._state:
            return self._forked.pop(request_id)

    def kill(self, pid: int) -> None:
        try:
            with self._send_lock:
                send_request(self._socket, ("kill", pid))
        except OSError:
            pass

    def _warm(self, modes: tuple[str, ...] | list[str]) -> None:
        """Have the zygote warm up the capture modes of a job it is about to fork, once each
        (``fxcore.worker.capture.base.warm``): it does so before that fork, so that the child
        and every later one inherit it rather than pay for it again."""
        if os.environ.get("FX_LSP_NO_PRELOAD") == "1":
            return
        with self._state:
            new = [mode for mode in modes if mode not in self._warmed]
            self._warmed.update(new)
        if new:
            with self._send_lock:
                send_request(self._socket, ("warm", new))

    def preload(self, packages: list[str]) -> None:
        try:
            with self._send_lock:
                send_request(self._socket, ("preload", packages))
        except OSError:
            pass  # a dead zygote is replaced on the next fork

    def forget_exit(self, pid: int) -> None:
        """Drop the exit status of a child whose result is complete, now or when it comes."""
        with self._state:
            if self._exit_codes.pop(pid, None) is None:
                self._ignored_exits.add(pid)

    def has_exited(self, pid: int) -> bool:
        with self._state:
            return pid in self._exit_codes or self._dead

    def exit_code(self, pid: int, timeout: float) -> int | None:
        self._wait_for(lambda: pid in self._exit_codes, timeout)
        with self._state:
            return self._exit_codes.pop(pid, None)

    def close(self) -> None:
        # shutdown() sends EOF even while the reader thread is blocked in recv(); on EOF
        # the zygote kills its children and exits.
        with contextlib.suppress(OSError):  # already disconnected: the zygote is going
            self._socket.shutdown(socket.SHUT_RDWR)
        self._socket.close()
        with self._state:
            starting = not self._ready
        if starting:
            # Still importing torch, it reads no socket yet and has no child: nothing is lost
            # by stopping it now rather than after the import (a Ctrl+C at the start).
            self._process.kill()
        try:
            self._process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

def bounded_lines(stream: Any, limit: int) -> Iterator[tuple[bytes, int]]:
    """The lines of ``stream``, each cut to ``limit`` bytes, with how many bytes were cut: a
    line of workspace code's 30 MB print is neither held whole nor logged whole."""
    while raw := stream.readline(limit):
        cut = 0
        if len(raw) == limit and not raw.endswith(b"\n"):
            while (rest := stream.readline(1 << 16)) and not rest.endswith(b"\n"):
                cut += len(rest)
            cut += len(rest)
        yield raw, cut
