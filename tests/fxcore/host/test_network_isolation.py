"""Workers get real network isolation: no connection leaves a worker, whatever makes it.

A listener opened here on 127.0.0.1 waits while the real CLI checks model files that try to
reach it through the C-level ``_socket`` module, through a child process, through ``ctypes``,
and by joining the network namespace of the process that forked the worker; afterwards the
listener must have no pending connection, and every class must still be traced. This runs as
started (a user + network namespace where the OS allows one) and again inside a user
namespace that allows no further one, where only a network namespace alone can be made.
``fx-lsp --version`` names the mechanism; where namespaces are refused it names the
Python-only fallback, and the tests that need a namespace skip with its reason.
"""

from __future__ import annotations

import os
import select
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fx_lsp.cli.output_formats.json_report import parse_report

from engine_support import REPO_ROOT, Workspace

NAMESPACE = "network isolation: network namespace"
USER_NAMESPACE = "network isolation: user+network namespace"
FALLBACK = "network isolation: Python socket block only ("

#: Runs a command inside a new user namespace (as its root, with its capabilities) in which
#: no further user namespace may be made.
NO_MORE_USER_NAMESPACES = 'echo 0 > /proc/sys/user/max_user_namespaces && exec "$@"'

#: Where user namespaces are refused but a network namespace alone may be made.
USER_NAMESPACES_REFUSED = ("unshare", "--user", "--map-root-user", "sh", "-c",
                           NO_MORE_USER_NAMESPACES, "sh")

#: The same without capabilities: the OS refuses both kinds of namespace.
NAMESPACES_REFUSED = (*USER_NAMESPACES_REFUSED, "setpriv", "--bounding-set=-all",
                      "--inh-caps=-all")

RAW_SOCKET = """
import _socket
import os

from torch import nn

with open("uid.txt", "w") as marker:  # the working folder is the workspace root
    marker.write(str(os.getuid()))
try:
    connection = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
    connection.settimeout(5)
    connection.connect(("127.0.0.1", {port}))
    print("raw socket: connected")
except OSError as error:
    print("raw socket:", error)


class RawSocketNet(nn.Module):
    def forward(self, x):
        return x + 1
"""

CHILD_PROCESS = """
import subprocess
import sys

from torch import nn

CONNECT = "import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5)"


class ChildProcessNet(nn.Module):
    def __init__(self):
        super().__init__()
        subprocess.run([sys.executable, "-c", CONNECT], timeout=60, check=False)

    def forward(self, x):
        return x + 1
"""

CTYPES_CONNECT = """
import ctypes
import socket
import struct

from torch import nn


def connect():
    libc = ctypes.CDLL(None, use_errno=True)
    descriptor = libc.socket(socket.AF_INET, socket.SOCK_STREAM, 0)
    # struct sockaddr_in: the family in host order, the port in network order, the address.
    address = (struct.pack("=H", socket.AF_INET) + struct.pack("!H", {port})
               + socket.inet_aton("127.0.0.1") + bytes(8))
    print("ctypes connect:", libc.connect(descriptor, address, len(address)),
          ctypes.get_errno())
    libc.close(descriptor)


class CtypesNet(nn.Module):
    def __init__(self):
        super().__init__()
        connect()

    def forward(self, x):
        return x + 1
"""

REJOIN = """
import _socket
import ctypes
import os

from torch import nn

CLONE_NEWNET = 0x40000000


class RejoinNet(nn.Module):
    def __init__(self):
        super().__init__()
        # Back into the network namespace of the process that forked this one (the zygote's,
        # the host's), then connect: what root can do from a namespace it entered alone.
        libc = ctypes.CDLL(None, use_errno=True)
        try:
            descriptor = os.open(f"/proc/{{os.getppid()}}/ns/net", os.O_RDONLY)
            print("setns:", libc.setns(descriptor, CLONE_NEWNET), ctypes.get_errno())
            connection = _socket.socket(_socket.AF_INET, _socket.SOCK_STREAM)
            connection.settimeout(5)
            connection.connect(("127.0.0.1", {port}))
        except OSError as error:
            print("rejoin:", error)

    def forward(self, x):
        return x + 1
"""

MODELS = {"raw_socket.py": RAW_SOCKET, "child_process.py": CHILD_PROCESS,
          "ctypes_connect.py": CTYPES_CONNECT, "rejoin.py": REJOIN}


def run_fx_lsp(wrapper: tuple[str, ...], *arguments: str, cwd: Path,
               cache: Path) -> subprocess.CompletedProcess[str]:
    environment = dict(os.environ, PYTHONPATH=str(REPO_ROOT), XDG_CACHE_HOME=str(cache))
    return subprocess.run([*wrapper, sys.executable, "-m", "fx_lsp", *arguments], cwd=cwd,
                          env=environment, capture_output=True, text=True, timeout=300)


@dataclass
class Attempts:
    """What a CLI run over the model files left behind."""

    mode: str
    isolation: str  # the line `fx-lsp --version` printed in the same mode
    modules: dict[str, dict[str, Any]]
    reached: dict[str, bool]  # model file -> whether its listener has a pending connection
    worker_uid: str
    bytecode: list[str]


MODES = {"as started": (), "user namespaces refused": USER_NAMESPACES_REFUSED}


def _refusing_tools_or_skip() -> None:
    if shutil.which("unshare") is None or shutil.which("setpriv") is None:
        pytest.skip("unshare and setpriv (util-linux) are needed to refuse namespaces")


@pytest.fixture(scope="module", params=sorted(MODES))
def attempts(request: pytest.FixtureRequest,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[Attempts]:
    wrapper = MODES[request.param]
    if wrapper:
        _refusing_tools_or_skip()
    root = tmp_path_factory.mktemp("network")
    workspace = Workspace(root)
    version = run_fx_lsp(wrapper, "--version", cwd=root, cache=root)
    if wrapper and version.returncode != 0:
        pytest.skip(f"no user namespace to run in: {version.stderr.strip()}")
    line = version.stdout.splitlines()[-1]
    if line.startswith(FALLBACK):
        pytest.skip(f"the OS refuses network namespaces here ({line})")
    listeners = {name: socket.create_server(("127.0.0.1", 0)) for name in MODELS}
    try:
        for name, text in MODELS.items():
            workspace.write(name, text.format(port=listeners[name].getsockname()[1]))
        completed = run_fx_lsp(wrapper, "check", "--no-cache", "--format", "json", ".",
                               cwd=root, cache=root / "cache")
        assert completed.returncode == 0, completed.stdout + completed.stderr
        report = parse_report(completed.stdout)
        # A connection the kernel completed waits in the listener's queue: readable now.
        reached = {name: bool(select.select([listener], [], [], 0)[0])
                   for name, listener in listeners.items()}
    finally:
        for listener in listeners.values():
            listener.close()
    yield Attempts(
        mode=request.param,
        isolation=line,
        modules={m["class"]: m for m in report["modules"]},
        reached=reached,
        worker_uid=(root / "uid.txt").read_text(),
        bytecode=[path.name for path in (root / "cache").rglob("*.pyc")],
    )


def test_version_names_the_network_isolation_in_force(tmp_path: Path) -> None:
    version = run_fx_lsp((), "--version", cwd=tmp_path, cache=tmp_path)
    assert version.returncode == 0, version.stderr
    first, second = version.stdout.splitlines()
    assert first.startswith("fx-lsp ")
    assert second in (NAMESPACE, USER_NAMESPACE) or second.startswith(FALLBACK), second


def test_version_names_the_namespace_each_mode_gets(attempts: Attempts) -> None:
    if attempts.mode == "user namespaces refused":
        assert attempts.isolation == NAMESPACE
    else:
        assert attempts.isolation in (NAMESPACE, USER_NAMESPACE)


def test_raw_socket_connection_never_reaches_the_listener(attempts: Attempts) -> None:
    assert not attempts.reached["raw_socket.py"]
    assert attempts.modules["RawSocketNet"]["status"] == "traceable"


def test_child_process_connection_never_reaches_the_listener(attempts: Attempts) -> None:
    assert not attempts.reached["child_process.py"]
    assert attempts.modules["ChildProcessNet"]["status"] == "traceable"


def test_ctypes_connection_never_reaches_the_listener(attempts: Attempts) -> None:
    assert not attempts.reached["ctypes_connect.py"]
    assert attempts.modules["CtypesNet"]["status"] == "traceable"


def test_rejoining_the_parents_network_namespace_never_reaches_the_listener(
        attempts: Attempts) -> None:
    if attempts.isolation == NAMESPACE:
        pytest.skip("a network namespace alone does not stop root from joining another one")
    assert not attempts.reached["rejoin.py"]
    assert attempts.modules["RejoinNet"]["status"] == "traceable"


def test_workers_keep_their_uid_and_their_bytecode_cache(attempts: Attempts) -> None:
    if attempts.mode == "as started":  # elsewhere the test's uid is the namespace's root
        assert attempts.worker_uid == str(os.getuid())
    assert any(name.startswith("raw_socket.") for name in attempts.bytecode), \
        attempts.bytecode


def refused_isolation_line(cwd: Path) -> str:
    """The isolation `fx-lsp --version` names where the OS refuses both namespaces."""
    _refusing_tools_or_skip()
    refused = run_fx_lsp(NAMESPACES_REFUSED, "--version", cwd=cwd, cache=cwd)
    if refused.returncode != 0 and refused.stderr.startswith("unshare"):
        pytest.skip(f"no user namespace to refuse namespaces in: {refused.stderr.strip()}")
    assert refused.returncode == 0, refused.stderr
    return refused.stdout.splitlines()[-1]


def test_version_names_the_fallback_when_namespaces_are_refused(tmp_path: Path) -> None:
    line = refused_isolation_line(tmp_path)
    assert line.startswith(FALLBACK), line
    assert "unshare(CLONE_NEWUSER|CLONE_NEWNET): No space left on device" in line, line
    assert "unshare(CLONE_NEWNET): Operation not permitted" in line, line


def test_workers_still_trace_with_the_python_block_when_namespaces_are_refused(
        tmp_path: Path) -> None:
    if not refused_isolation_line(tmp_path).startswith(FALLBACK):
        pytest.skip("namespaces could not be refused here")
    workspace = Workspace(tmp_path)
    workspace.write("downloader.py", """
        import socket

        from torch import nn


        class Downloader(nn.Module):
            def __init__(self):
                super().__init__()
                socket.create_connection(("127.0.0.1", 9), timeout=5)

            def forward(self, x):
                return x + 1
    """)
    workspace.write("plain.py", """
        from torch import nn


        class Plain(nn.Module):
            def forward(self, x):
                return x + 1
    """)
    completed = run_fx_lsp(NAMESPACES_REFUSED, "check", "--no-cache", "--format", "json", ".",
                           cwd=tmp_path, cache=tmp_path / "cache")
    report = parse_report(completed.stdout)
    modules = {m["class"]: m for m in report["modules"]}
    assert modules["Plain"]["status"] == "traceable"
    (failure,) = modules["Downloader"]["failures"]
    assert "fx-lsp blocks network access" in failure["message"]
