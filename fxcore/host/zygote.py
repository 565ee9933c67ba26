"""A process that imports torch once and forks a fresh child for each trace job.

The engine starts it (``python -c "import fxcore.host.zygote; ..." FD``, from a neutral working
folder so that no workspace file shadows a module it imports) with one end of a socket pair. Over
that socket the engine sends fork requests, each carrying a pickled ``TraceJob`` and two
file descriptors (a results pipe and an output pipe); the zygote answers, in JSON, with the
child's pid, later with its exit status, and kills a child's process group on request. What
the child reports goes straight to the engine over the results pipe, as JSON
(``fxcore.protocol.worker_messages``). When the
engine's end closes (the engine exited or crashed), the zygote kills its children and
exits, so no process outlives the server.

The zygote's own stdout is not the server's: the engine starts it with stdout redirected,
so nothing printed here can corrupt a language-server channel.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import pickle
import resource
import select
import signal
import socket
import struct
import sys
import time
from typing import Any

_HEADER = struct.Struct("!I")


def _send_frame(sock: socket.socket, payload: bytes, fds: list[int] | None = None) -> None:
    data = _HEADER.pack(len(payload)) + payload
    if fds:
        sent = socket.send_fds(sock, [data[:_HEADER.size]], fds)
        sock.sendall(data[sent:])
    else:
        sock.sendall(data)


def _receive_exactly(sock: socket.socket, size: int) -> bytes:
    chunks = bytearray()
    while len(chunks) < size:
        chunk = sock.recv(size - len(chunks))
        if not chunk:
            raise EOFError
        chunks += chunk
    return bytes(chunks)


def _receive_frame(sock: socket.socket, max_bytes: int | None = None) -> tuple[bytes, list[int]]:
    header, fds, _flags, _address = socket.recv_fds(sock, _HEADER.size, maxfds=4)
    if not header:
        raise EOFError
    if len(header) < _HEADER.size:
        header += _receive_exactly(sock, _HEADER.size - len(header))
    (size,) = _HEADER.unpack(header)
    if max_bytes is not None and size > max_bytes:
        raise ConnectionError(f"a message of {size} bytes, more than {max_bytes}")
    return _receive_exactly(sock, size), list(fds)


def send_request(sock: socket.socket, message: tuple[Any, ...],
                 fds: list[int] | None = None) -> None:
    """Engine to zygote: pickled, because the zygote trusts the engine that started it and a
    ``TraceJob`` carries configuration values of every TOML type."""
    _send_frame(sock, pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL), fds)


def receive_request(sock: socket.socket) -> tuple[Any, list[int]]:
    payload, fds = _receive_frame(sock)
    return pickle.loads(payload), fds


#: Zygote to engine: a name and integers (``["forked", request id, pid]``).
_REPORT_ARITY = {"ready": 0, "forked": 2, "exited": 2}
_MAX_REPORT_BYTES = 4096


def send_report(sock: socket.socket, *message: str | int) -> None:
    """Zygote to engine: JSON, so the engine never unpickles anything from the process that
    forks workspace code (and holds installed packages it preloaded)."""
    _send_frame(sock, json.dumps(list(message)).encode("ascii"))


def receive_report(sock: socket.socket) -> tuple[str, ...] | tuple[str, int, int]:
    """The next report; ``ConnectionError`` for anything that is not one."""
    payload, fds = _receive_frame(sock, _MAX_REPORT_BYTES)
    for fd in fds:
        os.close(fd)
    try:
        report = json.loads(payload)
    except ValueError:
        raise ConnectionError("a report that is not JSON") from None
    if not (isinstance(report, list) and report and report[0] in _REPORT_ARITY
            and len(report) == 1 + _REPORT_ARITY[report[0]]
            and all(type(value) is int for value in report[1:])):
        raise ConnectionError("a report of an unknown shape")
    return tuple(report)


def _run_child(job: Any, results_fd: int, output_fd: int, memory_limit_mb: int) -> None:
    """Inside the forked child: isolate output and memory, run the job, exit."""
    from multiprocessing.connection import Connection

    os.setpgid(0, 0)  # its own process group, so a kill also takes what it started
    # Orphans of what user code starts (daemons, new sessions) stay below the job while it
    # runs, and below the zygote after, which then kills them.
    become_subreaper()
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    os.close(output_fd)
    # Each printed line reaches the pipe at once: a child killed on time-out (or crashing)
    # flushes nothing, and its last lines are what a time-out or crash message quotes.
    sys.stdout.reconfigure(line_buffering=True)
    try:
        with open("/proc/self/statm") as statm:
            virtual_bytes = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        limit = virtual_bytes + memory_limit_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (OSError, ValueError, OverflowError):
        pass  # no /proc or not allowed: run uncapped rather than not at all

    from fxcore.host import sandbox
    from fxcore.protocol.worker_messages import WorkerMessage, encode_message
    from fxcore.worker.pipeline.job import run_job

    sandbox.enter(job.path, job.workspace_root, job.environment)
    results = Connection(results_fd, readable=False)
    job_pid = os.getpid()

    def send_from_job_process(message: WorkerMessage) -> None:
        # A copy made by `os.fork()` in user code runs on through the job: only the job's
        # own process may report, or every class would be reported once per copy.
        if os.getpid() == job_pid:
            results.send_bytes(encode_message(message))

    run_job(job, send_from_job_process)
    sys.stdout.flush()
    sys.stderr.flush()


_PR_SET_CHILD_SUBREAPER = 36


def become_subreaper() -> bool:
    """Make orphaned descendants of this process its children instead of init's (Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False  # not Linux: orphans go to init, as before


#: The states of /proc/PID/stat of a stopped process: by a signal, or under a tracer.
STOPPED_STATES = frozenset({"T", "t"})


def _stat_fields(pid: int | str) -> list[bytes] | None:
    """The fields of /proc/PID/stat after the command name, the state first; None when the
    process is gone or there is no /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            stat = handle.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: parse after its end.
    return stat[stat.rfind(b")") + 2:].split()


def process_state(pid: int) -> str | None:
    """A process's state letter (``R``, ``S``, ``T`` when stopped, ...); None when it cannot
    be read."""
    fields = _stat_fields(pid)
    return fields[0].decode("ascii", "replace") if fields else None


def _parent_pids() -> dict[int, int]:
    """pid -> parent pid of every process visible in /proc (empty without /proc)."""
    parents: dict[int, int] = {}
    try:
        names = os.listdir("/proc")
    except OSError:
        return parents
    for name in names:
        if not name.isdigit():
            continue
        fields = _stat_fields(name)
        if fields is None:
            continue  # exited meanwhile
        with contextlib.suppress(IndexError, ValueError):
            parents[int(name)] = int(fields[1])
    return parents


def kill_leftovers(job_children: set[int]) -> None:
    """Kill every descendant of this process that is not a running job child, nor below
    one: as a subreaper, this process inherits what finished jobs left behind."""
    parents = _parent_pids()
    own_pid = os.getpid()
    children_of: dict[int, list[int]] = {}
    for pid, parent in parents.items():
        children_of.setdefault(parent, []).append(pid)
    doomed = [pid for pid in children_of.get(own_pid, []) if pid not in job_children]
    while doomed:
        pid = doomed.pop()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
        doomed.extend(children_of.get(pid, []))


def serve(sock: socket.socket) -> None:
    children: set[int] = set()
    # SIGCHLD writes to this pipe, so a child's exit wakes the loop at once.
    wakeup_reader, wakeup_writer = os.pipe()
    os.set_blocking(wakeup_reader, False)
    os.set_blocking(wakeup_writer, False)
    signal.set_wakeup_fd(wakeup_writer)
    signal.signal(signal.SIGCHLD, lambda _signum, _frame: None)
    try:
        while True:
            readable, _, _ = select.select([sock, wakeup_reader], [], [], 1.0)
            if wakeup_reader in readable:
                while True:
                    try:
                        if not os.read(wakeup_reader, 512):
                            break
                    except BlockingIOError:
                        break
            _report_exits(sock, children)
            kill_leftovers(children)
            if sock not in readable:
                continue
            try:
                message, fds = receive_request(sock)
            except (EOFError, ConnectionError):
                return
            if message[0] == "fork":
                _, request_id, job, memory_limit_mb = message
                pid = os.fork()
                if pid == 0:
                    status = 0
                    try:
                        sock.close()
                        signal.set_wakeup_fd(-1)
                        os.close(wakeup_reader)
                        os.close(wakeup_writer)
                        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                        signal.signal(signal.SIGTERM, signal.SIG_DFL)
                        _run_child(job, fds[0], fds[1], memory_limit_mb)
                    except BaseException:
                        status = 70
                    finally:
                        os._exit(status)
                for fd in fds:
                    os.close(fd)
                children.add(pid)
                send_report(sock, "forked", request_id, pid)
            elif message[0] == "preload":
                _preload(message[1])
            elif message[0] == "warm":
                _warm(message[1])
            elif message[0] == "kill":
                pid = message[1]
                if pid in children:  # not reaped yet, so the pid is still this child's
                    _kill_group(pid)
    finally:
        for pid in children:
            _kill_group(pid)
        kill_leftovers(set())
        _reap_killed()


#: How long the zygote, on its way out, waits for what it killed to end.
_REAP_SECONDS = 2.0


def _reap_killed() -> None:
    """Wait for the processes just killed (children, and orphans adopted meanwhile), so that
    none is left a zombie for init to reap: in a container, init may never reap. Bounded: a
    process stuck in the kernel must not keep the zygote from exiting."""
    deadline = time.monotonic() + _REAP_SECONDS
    while time.monotonic() < deadline:
        try:
            pid, _status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return  # none left
        if pid == 0:
            kill_leftovers(set())  # a descendant that was not yet ours when we killed
            time.sleep(0.01)


def _preload(packages: list[str]) -> None:
    """Import installed packages that jobs of this workspace needed, so that every later
    child inherits them. Only names the engine allowed arrive here (those that installed
    distributions provide from site-packages: ``fxcore.host.installed_packages``), and the
    zygote's ``sys.path`` holds no workspace folder, so no workspace code runs."""
    import gc
    import importlib

    for name in packages:
        try:
            importlib.import_module(name)
        except BaseException:  # a package that fails here is simply imported by each child
            continue
    gc.collect()
    gc.freeze()


def _warm(modes: list[str]) -> None:
    """Warm up these capture modes (``fxcore.worker.capture.base.warm``: fx-lsp's own small
    model, no workspace code), so that every child forked afterwards inherits what their
    first capture in a process loads and caches."""
    import gc

    from fxcore.worker.capture.base import warm
    from fxcore.worker.capture.modes import CAPTURES

    for mode in modes:
        capture = CAPTURES.get(mode)
        if capture is None:
            continue
        try:
            warm(capture)
        except Exception as error:  # then each child pays for its first capture, as before
            print(f"fx-lsp: warming up the {mode} capture failed: {error!r}", file=sys.stderr)
    gc.collect()
    gc.freeze()


def _kill_group(pid: int) -> None:
    for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            kill()
        except (ProcessLookupError, PermissionError):
            continue


def _report_exits(sock: socket.socket, children: set[int]) -> None:
    while True:  # adopted orphans are reaped here too
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        if pid in children:  # else an adopted orphan, killed by kill_leftovers
            children.discard(pid)
            send_report(sock, "exited", pid, os.waitstatus_to_exitcode(status))


def main() -> None:
    sock = socket.socket(fileno=int(sys.argv[1]))
    become_subreaper()
    import fxcore.host.preload  # noqa: F401  (torch, once, for every child)

    try:
        send_report(sock, "ready")
        serve(sock)
    except (BrokenPipeError, ConnectionError):
        pass  # the engine went away: nobody is left to report to


if __name__ == "__main__":
    main()
