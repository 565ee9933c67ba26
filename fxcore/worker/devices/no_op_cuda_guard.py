"""A no-op CUDA device guard, as a CUDA build without a device has, on every build of torch.

torch's Python bindings of indexing (``x[i]``, ``x[mask] = v``), ``torch.nonzero``,
``Tensor.tolist``, ``float(t)``/``int(t)`` and others put a device guard on their tensor's
device before they dispatch. For a fake CUDA tensor a CUDA build's guard is the no-op one
``torch._C._ensureCUDADeviceGuardSet()`` swaps in where it counts no device (what FakeTensorMode
relies on to trace CUDA code without hardware). A CPU build has no CUDA guard at all, and that
call gives it none, so every such binding raised "PyTorch is not linked with support for cuda
devices" in the GPU view: verdicts on a laptop differed from a GPU workstation's. On a CUDA
build, the swap itself first asks the build's own guard for its device count, which is
``cudaGetDeviceCount``: the driver's library is loaded and initialised in the worker. So the
same no-op guard is put in CUDA's slot on both builds, without asking the one there.

The guard put here is torch's own no-op guard for Python-defined accelerators
(``torch._C._acc.DeviceGuard``: no device to set, one device counted, default streams), whose
type answers CUDA. torch registers such a guard only for ``privateuseone``, so it is registered
there and moved to CUDA's slot of c10's guard registry (``device_guard_impl_registry``, an array
of pointers by device type, exported by libc10); ``privateuseone``'s slot is emptied again.
Each step is checked, and where one does not hold (no such class or symbol in this release, an
occupied ``privateuseone`` slot) nothing is written and the reason is returned: on a CPU build
the classes judged for a GPU then get "not linked with support for cuda devices" where they
index, as before.
"""

from __future__ import annotations

import ctypes
from pathlib import Path

import torch

#: The guard registered, kept for the process's life (the registry holds a raw pointer).
_registered: list[object] = []


def _registry(slots: int) -> ctypes.Array[ctypes.c_void_p] | str:
    """c10's guard registry as ``slots`` pointers, or why it cannot be read."""
    library = Path(torch.__file__).parent / "lib" / "libc10.so"
    try:
        c10 = ctypes.CDLL(str(library))
        symbol = ctypes.c_void_p.in_dll(c10, "_ZN3c104impl26device_guard_impl_registryE")
    except (OSError, ValueError) as error:
        return f"c10's device guard registry is not readable here ({error})"
    return (ctypes.c_void_p * slots).from_address(ctypes.addressof(symbol))


def register_no_op_cuda_guard() -> str | None:
    """Give CUDA a no-op device guard, in place of a CUDA build's own or where it has none (a
    CPU build); None once it has one, else why not. Only ever called in a worker that judges a
    class for a GPU."""
    device_types = getattr(torch._C._autograd, "DeviceType", None)
    base = getattr(getattr(torch._C, "_acc", None), "DeviceGuard", None)
    register = getattr(getattr(torch._C, "_acc", None),
                       "register_python_privateuseone_device_guard", None)
    if device_types is None or base is None or register is None:
        return "this torch has no Python-defined device guard to give CUDA"
    cuda, private_use = int(device_types.CUDA), int(device_types.PrivateUse1)
    registry = _registry(max(cuda, private_use) + 1)
    if isinstance(registry, str):
        return registry
    if _registered:
        return None  # registered before, in this worker
    # A CUDA build's own guard in CUDA's slot is replaced, never asked: its device count is
    # cudaGetDeviceCount, which loads and initialises the driver. Where no device is visible
    # (always, in fx-lsp's processes) torch swaps in a no-op guard all the same.
    if registry[private_use]:
        return "the privateuseone device guard is taken, so none can be registered for CUDA"

    class NoOpCudaGuard(base):  # type: ignore[misc, valid-type]
        def type_(self) -> object:
            return device_types.CUDA

    guard = NoOpCudaGuard()
    if not register(guard) or not registry[private_use]:
        return "torch did not register the device guard"
    registry[cuda], registry[private_use] = registry[private_use], None
    _registered.append(guard)
    return None
