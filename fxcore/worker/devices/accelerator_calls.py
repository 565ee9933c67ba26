"""A record of every call of torch's accelerator initialisation in fx-lsp's processes, for the
tests that prove the zygote and the workers never make one (``accelerator_guard``).

With ``FX_LSP_RECORD_ACCELERATOR_CALLS`` naming a file, the zygote installs ``record`` as soon
as torch is imported, before the guard and before anything else of fx-lsp's runs: a profile
function that sees every call, in every thread, of the entry points the guard replaces, by the
identity of the functions themselves, so that a caller holding an entry point from before the
guard (``from torch.cuda import _lazy_init``) is seen too. Forked children inherit it. Each
call is one JSON line in the file: the process, the entry point and the innermost frames that
called it. The profiler slows every call: it is a test's instrument, never on otherwise.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import traceback
from typing import Any

#: The variable that names the record's file.
RECORD_VARIABLE = "FX_LSP_RECORD_ACCELERATOR_CALLS"
_C_ENTRY_POINTS = ("_cuda_getDeviceCount", "_cuda_init", "_xpu_getDeviceCount", "_xpu_init")
_FRAMES = 6


def entry_points() -> tuple[dict[Any, str], dict[Any, str]]:
    """torch's initialisation entry points present in this build: C functions by object, and
    Python ones (``torch.cuda._lazy_init``) by code object, each with its name."""
    import torch

    c_functions = {getattr(torch._C, name): f"torch._C.{name}"
                   for name in _C_ENTRY_POINTS if hasattr(torch._C, name)}
    codes = {}
    for package in ("cuda", "xpu"):
        lazy_init = getattr(getattr(torch, package, None), "_lazy_init", None)
        code = getattr(lazy_init, "__code__", None)
        if code is not None:
            codes[code] = f"torch.{package}._lazy_init"
    return c_functions, codes


def record(path: str) -> None:
    """Record every call of ``entry_points`` in this process and its future threads and forked
    children, appending to ``path``."""
    c_functions, codes = entry_points()

    def write(name: str, frame: Any) -> None:
        stack = traceback.format_list(traceback.extract_stack(frame, limit=_FRAMES))
        line = json.dumps({"pid": os.getpid(), "call": name, "stack": stack}) + "\n"
        descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(descriptor, line.encode())
        finally:
            os.close(descriptor)

    def profile(frame: Any, event: str, argument: Any) -> None:
        if event == "c_call":
            name = c_functions.get(argument)
            if name is not None:
                write(name, frame)
        elif event == "call":
            name = codes.get(frame.f_code)
            if name is not None:
                write(name, frame.f_back)

    sys.setprofile(profile)
    threading.setprofile(profile)


def record_if_asked() -> None:
    """``record`` where the environment names a file for it."""
    path = os.environ.get(RECORD_VARIABLE)
    if path:
        record(path)
