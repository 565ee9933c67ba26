"""fx-lsp's processes never initialise an accelerator.

``torch.compile`` asks ``torch.cuda.is_available()`` on every frame it compiles (to save the
CUDA random state), and on a CUDA build that is ``cudaGetDeviceCount``: the CUDA driver is
initialised and torch marks every process forked afterwards as unable to use CUDA ("Cannot
re-initialize CUDA in forked subprocess"). The zygote's warm-up compiles before it forks, so on
a machine with a GPU every compile verdict was that error; a context would also hold hundreds
of MB of the GPU the user's own jobs need.

Two walls, so that neither alone must be complete:

- the zygote, and each worker after its workspace's ``pass-env``, has no device visible
  (``fxcore.host.worker_environment.HIDDEN_DEVICES``), so that even a call past the guard finds
  no device to make a context on;
- after torch is imported, ``guard()`` replaces the Python and C entry points of torch's
  CUDA and XPU initialisation with ones that answer "no device" without calling the driver:
  device counts are 0 and a lazy initialisation raises ``NoAcceleratorError``. Code written
  for a GPU is then judged with ``cuda_view``, which answers as a GPU would, without hardware.

The guard also covers a path into the driver that is C++ from end to end:
``FakeTensorMode.__enter__`` calls ``torch._C._ensureCUDADeviceGuardSet()`` whenever
``torch.cuda.is_available()`` answers False (which the guard makes it answer), and on a CUDA
build that asks the registered CUDA device guard for its device count: ``cudaGetDeviceCount``,
which loads ``libcuda.so.1``, in the zygote's export warm-up, before any fork. The call only
swaps in a no-op CUDA device guard where a CUDA build counts no device; code judged for the
CPU never makes a CUDA tensor (its initialisation is refused), so it needs none, and the call is
replaced by one that does nothing. Code written for a GPU needs that no-op guard (torch 2.15's
compile of fake CUDA tensors asks the device guard, and the CUDA build's real one fails with no
device): ``cuda_view`` puts one in place (``set_up_no_op_cuda_device_guard``) in the worker of
such a class only, never in the zygote. It is the same guard on both builds
(``no_op_cuda_guard``), put in CUDA's slot without asking the CUDA build's own guard for its
count, so that no worker loads the driver either; torch's original call, which asks it, runs
only where this torch cannot take that guard.

A CUDA generator (``torch.Generator("cuda")``) is C++ from end to end as well: its
constructor asks the CUDA runtime for the current stream. Such a call is refused too, before
any C++ runs (from torch 2.13 by the generator type's metaclass, which is written in Python;
before, by ``torch.Generator`` standing for a class that refuses it); in the GPU view it makes
the view's generator instead (``cuda_generators``).

Each entry point is feature-detected: a CPU build has none of the C ones, and a release
without one is simply not patched there.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

#: torch's accelerator packages whose lazy initialisation is guarded.
GUARDED_PACKAGES = ("cuda", "xpu")
#: The C functions that count or initialise an accelerator's devices, by package.
_C_COUNTS = {"cuda": "_cuda_getDeviceCount", "xpu": "_xpu_getDeviceCount"}
_C_INITS = {"cuda": "_cuda_init", "xpu": "_xpu_init"}
#: FakeTensorMode's set-up of a no-op CUDA device guard, which counts the devices first.
_C_DEVICE_GUARD_SETUP = "_ensureCUDADeviceGuardSet"


class NoAcceleratorError(RuntimeError):
    """Code judged for the CPU asked for an accelerator."""


def _refusal(package: str) -> Callable[..., Any]:
    def refuse(*_args: Any, **_kwargs: Any) -> None:
        raise NoAcceleratorError(
            f"fx-lsp judges this class for the CPU, and its processes never initialise "
            f"{package.upper()}: set `device = \"{package}\"` under [tool.fx-lsp] to judge "
            f"it for a GPU")
    refuse.__name__ = f"_lazy_init_refused_{package}"
    return refuse


def _no_devices() -> int:
    return 0


#: torch's own ``_ensureCUDADeviceGuardSet``, once ``guard()`` replaced it.
_torch_device_guard_setup: Callable[[], None] | None = None


def _no_device_guard_setup() -> None:
    """What ``_ensureCUDADeviceGuardSet`` does where no CUDA tensor is made: nothing."""


def set_up_no_op_cuda_device_guard() -> str | None:
    """What torch's own ``_ensureCUDADeviceGuardSet`` does where no device is visible, without
    its device count (``cudaGetDeviceCount``, the driver): CUDA gets a no-op device guard,
    whose count of one makes every later call do nothing. Where this torch cannot take
    ``no_op_cuda_guard``'s guard, a CUDA build makes torch's own call instead. None once CUDA
    has its no-op guard, else why it has none."""
    from fxcore.worker.devices.no_op_cuda_guard import register_no_op_cuda_guard

    gap = register_no_op_cuda_guard()
    if gap is not None and _torch_device_guard_setup is not None:
        _torch_device_guard_setup()
        return None
    return gap


def lazy_init_bindings(package: str) -> list[tuple[Any, str]]:
    """Every module of ``torch.<package>`` that holds its ``_lazy_init`` under that name
    (``torch.cuda.random`` imports it by name), with the attribute: where a replacement must
    go for every caller to see it, torch's C++ included (it looks the attribute up on
    ``torch.cuda`` each time)."""
    prefix = f"torch.{package}"
    package_module = sys.modules.get(prefix)
    original = getattr(package_module, "_lazy_init", None)
    if original is None:
        return []
    return [(module, "_lazy_init") for name, module in list(sys.modules.items())
            if (name == prefix or name.startswith(prefix + ".")) and module is not None
            and getattr(module, "_lazy_init", None) is original]


def guard() -> list[str]:
    """Put the guard in place in this process (torch imported); the entry points replaced."""
    import torch

    global _torch_device_guard_setup
    replaced = []
    for package in GUARDED_PACKAGES:
        if getattr(torch, package, None) is None:
            continue
        refusal = _refusal(package)
        for module, attribute in lazy_init_bindings(package):
            setattr(module, attribute, refusal)
            replaced.append(f"{module.__name__}.{attribute}")
        for table in (_C_COUNTS, _C_INITS):
            name = table[package]
            if hasattr(torch._C, name):
                setattr(torch._C, name, _no_devices if table is _C_COUNTS else refusal)
                replaced.append(f"torch._C.{name}")
    from fxcore.worker.devices.cuda_generators import refuse_outside_view

    refuse_outside_view(_refusal("cuda"))
    replaced.append("torch.Generator of a CUDA device")
    original = getattr(torch._C, _C_DEVICE_GUARD_SETUP, None)
    if original is not None and original is not _no_device_guard_setup:
        _torch_device_guard_setup = original
        setattr(torch._C, _C_DEVICE_GUARD_SETUP, _no_device_guard_setup)
        replaced.append(f"torch._C.{_C_DEVICE_GUARD_SETUP}")
    return replaced
