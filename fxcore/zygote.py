"""A process that imports torch once and forks a fresh child for each trace job.

The engine starts it as ``python -m fxcore.zygote FD`` with one end of a socket pair. Over
that socket the engine sends fork requests, each carrying a pickled ``TraceJob`` and two
file descriptors (a results pipe and an output pipe); the zygote answers with the child's
pid, later with its exit status, and kills a child's process group on request. When the
engine's end closes (the engine exited or crashed), the zygote kills its children and
exits, so no process outlives the server.

The zygote's own stdout is not the server's: the engine starts it with stdout redirected,
so nothing printed here can corrupt a language-server channel.
"""

from __future__ import annotations

import os
import pickle
import resource
import select
import signal
import socket
import struct
import sys
from typing import Any

_HEADER = struct.Struct("!I")


def send_message(sock: socket.socket, message: Any, fds: list[int] | None = None) -> None:
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
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


def receive_message(sock: socket.socket) -> tuple[Any, list[int]]:
    header, fds, _flags, _address = socket.recv_fds(sock, _HEADER.size, maxfds=4)
    if not header:
        raise EOFError
    if len(header) < _HEADER.size:
        header += _receive_exactly(sock, _HEADER.size - len(header))
    (size,) = _HEADER.unpack(header)
    return pickle.loads(_receive_exactly(sock, size)), list(fds)


def _run_child(job: Any, results_fd: int, output_fd: int, memory_limit_mb: int) -> None:
    """Inside the forked child: isolate output and memory, run the job, exit."""
    from multiprocessing.connection import Connection

    os.setpgid(0, 0)  # its own process group, so a kill also takes what it started
    os.dup2(output_fd, 1)
    os.dup2(output_fd, 2)
    os.close(output_fd)
    try:
        with open("/proc/self/statm") as statm:
            virtual_bytes = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        limit = virtual_bytes + memory_limit_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (OSError, ValueError):
        pass  # no /proc or not allowed: run uncapped rather than not at all

    from fxcore import sandbox
    from fxcore.job import run_job

    sandbox.enter(job.path, job.workspace_root)
    results = Connection(results_fd, readable=False)
    run_job(job, results.send)
    sys.stdout.flush()
    sys.stderr.flush()


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
            if sock not in readable:
                continue
            try:
                message, fds = receive_message(sock)
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
                send_message(sock, ("forked", request_id, pid))
            elif message[0] == "preload":
                _preload(message[1])
            elif message[0] == "kill":
                pid = message[1]
                if pid in children:  # not reaped yet, so the pid is still this child's
                    _kill_group(pid)
    finally:
        for pid in children:
            _kill_group(pid)


def _preload(packages: list[str]) -> None:
    """Import installed packages that jobs of this workspace needed, so that every later
    child inherits them. Only names a child found in site-packages arrive here, and the
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


def _kill_group(pid: int) -> None:
    for kill in (lambda: os.killpg(pid, signal.SIGKILL), lambda: os.kill(pid, signal.SIGKILL)):
        try:
            kill()
        except (ProcessLookupError, PermissionError):
            continue


def _report_exits(sock: socket.socket, children: set[int]) -> None:
    while children:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        children.discard(pid)
        send_message(sock, ("exited", pid, os.waitstatus_to_exitcode(status)))


def main() -> None:
    sock = socket.socket(fileno=int(sys.argv[1]))
    import fxcore.preload  # noqa: F401  (torch, once, for every child)

    try:
        send_message(sock, ("ready",))
        serve(sock)
    except (BrokenPipeError, ConnectionError):
        pass  # the engine went away: nobody is left to report to


if __name__ == "__main__":
    main()
