"""What a worker child may do, set up once before it imports the user's file.

User code runs as a plain ``import`` would run it: ``sys.argv`` is ``[path]`` (not the
zygote's command line, which a config loader reading its arguments would choke on), the
working folder is the workspace root, and the module keeps its import name so
``if __name__ == "__main__":`` blocks never run.

Compiled bytecode goes to a user cache folder (``bytecode_folder``), never into the
workspace; ``FX_LSP_NO_BYTECODE=1`` turns writing it off (for measuring).

It opens no network connection and downloads no weights. Where the OS allows it the child
first moves into a network namespace of its own (``fxcore.host.network_isolation``), which cuts
off every connection whatever makes it, in the child and in every process it starts. The
Python socket block stays on top, as the fallback where no namespace can be made and for its
clear message: every connection attempt through the ``socket`` module fails at once with
``NetworkBlocked``. Hugging Face and torch hub are told to stay offline. A constructor that
asks for pretrained weights gets the architecture alone (see
``fxcore.worker.building.weights``).
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
from typing import Any

from fxcore.host import network_isolation
from fxcore.host.cache import user_cache_folder
from fxcore.host.worker_environment import HIDDEN_DEVICES

#: The message every blocked connection attempt raises with.
NETWORK_BLOCKED_MESSAGE = (
    "fx-lsp blocks network access while building and tracing models "
    "(no downloads, no weights); this connection attempt was refused"
)

#: Environment that makes the usual model hubs work offline, from their caches only.
OFFLINE_ENVIRONMENT = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
}


class NetworkBlocked(ConnectionRefusedError):
    """A worker tried to open a network connection."""

    def __init__(self, *_args: Any) -> None:
        super().__init__(NETWORK_BLOCKED_MESSAGE)


def _is_local_socket(family: Any) -> bool:
    return family == getattr(socket, "AF_UNIX", None)


def _block_network() -> None:
    """Refuse every non-Unix-socket connection and every name lookup."""
    original_connect = socket.socket.connect
    original_connect_ex = socket.socket.connect_ex

    def connect(self: socket.socket, address: Any) -> None:
        if _is_local_socket(self.family):
            return original_connect(self, address)
        raise NetworkBlocked()

    def connect_ex(self: socket.socket, address: Any) -> int:
        if _is_local_socket(self.family):
            return original_connect_ex(self, address)
        raise NetworkBlocked()

    def refuse(*_args: Any, **_kwargs: Any) -> Any:
        raise NetworkBlocked()

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
    socket.create_connection = refuse
    socket.getaddrinfo = refuse


def bytecode_folder() -> str:
    """Where workers keep compiled bytecode: a user cache folder, never the workspace (no
    ``__pycache__`` appears in the user's tree), shared by every child so a large package is
    compiled once rather than in each job."""
    return os.path.join(user_cache_folder(), "pycache")


def enter(path: str, workspace_root: str, environment: dict[str, str] | None = None) -> None:
    """Make this child run the user's file as a plain import from the workspace would, with
    ``environment`` (the variables its workspace's ``pass-env`` names) added to the zygote's.

    Call it in the freshly forked child, while it has one thread (a process with more cannot
    enter a new user namespace)."""
    network_isolation.isolate()
    sys.pycache_prefix = bytecode_folder()
    sys.dont_write_bytecode = os.environ.get("FX_LSP_NO_BYTECODE") == "1"
    sys.argv = [os.path.abspath(path)]
    with contextlib.suppress(OSError):  # a vanished root: stay where we are
        os.chdir(workspace_root)
    os.environ.update(environment or {})
    os.environ.update(OFFLINE_ENVIRONMENT)
    os.environ.update(HIDDEN_DEVICES)  # a workspace's pass-env does not show them again
    _block_network()
