"""What the front ends say of the engine's workers before or beside any run: whether the
installed torch is one fx-lsp supports (``installed_torch_support``), the logger their output
goes to (``WORKER_LOG``: the server logs it, ``--verbose`` prints it), the error raised when
they cannot start (``ZygoteError``), and how they are cut off the network
(``network_isolation.describe``). The host's own modules stay behind this face."""

from __future__ import annotations

from fxcore.host import network_isolation
from fxcore.host.torch_versions import TorchSupport, installed_torch_support
from fxcore.host.zygote_host import WORKER_LOG, ZygoteError

__all__ = ["WORKER_LOG", "TorchSupport", "ZygoteError", "installed_torch_support",
           "network_isolation"]
