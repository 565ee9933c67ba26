"""Real network isolation for a worker child: a network namespace of its own.

A job child calls ``isolate()`` right after the fork (it has one thread then), before it
imports any workspace code. It tries, in order:

1. ``unshare(CLONE_NEWUSER | CLONE_NEWNET)``: a new network namespace owned by a new user
   namespace. Unprivileged users may make one; the process's own uid and gid are mapped to
   themselves, so it keeps its identity and its files. It holds capabilities only inside
   its own namespaces: it cannot join another process's network namespace (``setns``), nor
   lift its memory cap. Root's capabilities then reach only files root owns: other users'
   files are open to it as far as their permission bits allow anyone;
2. ``unshare(CLONE_NEWNET)`` alone, where user namespaces are refused but the process may
   (``CAP_SYS_ADMIN``). Root then keeps its capabilities, with which it can join the
   namespace of another process (the zygote's is the host's) and connect from there;
3. neither: only the Python socket block of ``fxcore.host.sandbox`` stands.

The new network namespace holds one interface, its own loopback, and that is down: every
connection to another machine or to the host's loopback fails ("Network is unreachable"),
whatever makes it (``socket``, ``_socket``, a C extension, ``ctypes``) and in every process
the job starts, since children inherit the namespace. Names resolve from files such as
``/etc/hosts`` only. Unix sockets bound to a path belong to the file system and work as
before; abstract Unix sockets belong to the namespace, so the host's are out of reach.

``describe()`` says which of the three is in force without running workspace code: it runs
this file as a script in a throwaway interpreter (isolated mode, standard library only, so
nothing from the working folder or the workspace is importable), which makes the same
attempts on itself and prints the outcome.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys

#: From <linux/sched.h>.
CLONE_NEWNET = 0x40000000
CLONE_NEWUSER = 0x10000000

NETWORK_NAMESPACE = "network namespace"
USER_AND_NETWORK_NAMESPACE = "user+network namespace"
PYTHON_BLOCK_ONLY = "Python socket block only"

#: A probe is one interpreter start-up without site-packages: tens of milliseconds. Far more
#: means something is wrong, and the answer then is the weakest mechanism.
_PROBE_TIMEOUT_SECONDS = 10.0


def _unshare(flags: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(flags) != 0:
        error = ctypes.get_errno()
        raise OSError(error, os.strerror(error))


def _write(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


def _enter_user_and_network_namespaces() -> str:
    """The description, with a note when the own ids stay unmapped."""
    uid, gid = os.geteuid(), os.getegid()  # inside, unmapped, they read as 65534
    _unshare(CLONE_NEWUSER | CLONE_NEWNET)
    try:
        # Only the own ids: a process may map more only with capabilities in the parent
        # namespace, which it no longer has once inside the new one.
        _write("/proc/self/uid_map", f"{uid} {uid} 1\n")
        # A process may map its group only after giving up setgroups(2).
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/gid_map", f"{gid} {gid} 1\n")
    except OSError as error:
        # Root without CAP_SETFCAP may not map uid 0 (Linux 5.12+). The network is cut off
        # all the same and file access is still checked against the real ids; only
        # os.getuid() and os.getgid() then answer the overflow id (65534).
        return f"{USER_AND_NETWORK_NAMESPACE} (own uid/gid not mapped: {error.strerror})"
    return USER_AND_NETWORK_NAMESPACE


def isolate() -> str:
    """Move this single-threaded process into a network namespace of its own if the OS
    allows it; say which mechanism is then in force."""
    if not sys.platform.startswith("linux"):
        return f"{PYTHON_BLOCK_ONLY} (network namespaces are Linux only)"
    try:
        return _enter_user_and_network_namespaces()
    except OSError as with_user_namespace:
        try:
            _unshare(CLONE_NEWNET)
            return NETWORK_NAMESPACE
        except OSError as alone:
            return (f"{PYTHON_BLOCK_ONLY} (unshare(CLONE_NEWUSER|CLONE_NEWNET): "
                    f"{with_user_namespace.strerror}; unshare(CLONE_NEWNET): "
                    f"{alone.strerror})")


def describe() -> str:
    """Which mechanism a worker child gets here, found by a throwaway process that runs
    this file (fx-lsp's own code, never the workspace's) and tries the same on itself."""
    try:
        probe = subprocess.run(
            # -I: no environment variables, user site or script folder on sys.path; -S: no
            # site-packages either (this file needs the standard library only).
            [sys.executable, "-I", "-S", os.path.abspath(__file__)],
            stdin=subprocess.DEVNULL, capture_output=True, text=True,
            timeout=_PROBE_TIMEOUT_SECONDS,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return f"{PYTHON_BLOCK_ONLY} (the probe did not run: {error})"
    answer = probe.stdout.strip()
    if probe.returncode != 0 or not answer:
        return f"{PYTHON_BLOCK_ONLY} (the probe failed with status {probe.returncode})"
    return answer


if __name__ == "__main__":
    print(isolate())
