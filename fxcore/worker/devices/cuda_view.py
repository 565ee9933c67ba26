"""A GPU's view of torch for code written for one, with no hardware touched: what a class
judged for ``cuda`` (``device_choice``) is built and captured in.

- ``torch.cuda``'s queries answer as one GPU of ``GPU`` would (``is_available``,
  ``device_count``, ``current_device``, ``get_device_properties``/``_capability``/``_name``,
  ``is_bf16_supported``, memory figures, ``is_current_stream_capturing``), and calls with an
  effect only on hardware (``synchronize``, ``set_device``, the random state,
  ``empty_cache``, nvtx ranges) do nothing. Each is answered by swapping the function's
  code, not the function: dynamo and torch.export know these functions by identity
  (``synchronize`` is skipped, a graph break; ``device_count`` is a torch function that
  returns no tensor), and so see them exactly as on a GPU, while what runs eagerly is the
  answer.
- CUDA's lazy initialisation does nothing (``accelerator_guard`` has it refuse otherwise).
- Tensors the code puts on ``cuda`` are fake CUDA tensors where a run is fake, and stay meta
  tensors while the model is built on meta: ``.cuda()`` and ``.to("cuda")`` of a meta tensor
  keep it on meta. torch's own move of a fake tensor to CUDA asks the device (a CPU build has
  no CUDA device guard at all, and a CUDA build's asks the driver): the view's move is a fake
  copy whose fake device is CUDA, which touches neither.
- CUDA has a no-op device guard, on a CPU-only build too (``no_op_cuda_guard``): torch's
  bindings of indexing, ``nonzero``, ``tolist`` and ``float(t)`` put one on a fake CUDA
  tensor's device, so that a laptop's verdicts are a GPU workstation's.
- Fake tensor modes avoid a device's initialisation, as where CUDA is unavailable:
  ``torch.tensor(data, device="cuda")`` makes a fake CUDA tensor, not a real one first.

- ``torch.Generator("cuda")`` makes a generator whose ``device`` is CUDA without initialising
  CUDA (``cuda_generators``); torch takes it wherever it takes a generator.

- Streams and events (``torch.cuda.Stream``, ``Event``, ``current_stream``, ``stream(s)``)
  are torch's device-generic ones of ``cuda:0`` whose driver calls do nothing
  (``cuda_streams``): dynamo and torch.export see them as they see real ones.

- ``F.scaled_dot_product_attention`` picks the kernel an H100 picks for its inputs among the
  backends ``sdpa_kernel`` and ``torch.backends.cuda`` leave enabled, and where none fits
  raises a GPU's "No available kernel" (``attention_choice``).

- ``nn.LSTM``/``GRU``/``RNN`` on CUDA tensors run a composite of torch's without cuDNN, not a
  CUDA build's cuDNN path, which asks the runtime for a handle (``recurrent_kernels``).

- Operators without a fake kernel (``torch.geqrf``, ``to_sparse``) run their real kernel on
  the CPU, not on real CUDA tensors, and give fake CUDA tensors; torch.export's real copies of
  constants are made on the CPU (``cpu_fallback``).

CUDA graphs need a driver: code that captures one is not checkable in this view
(``UNSUPPORTED``).
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator
from types import FunctionType, SimpleNamespace
from typing import Any

import torch
from torch._subclasses import fake_tensor
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.utils._python_dispatch import _get_current_dispatch_mode

from fxcore.worker.devices import (
    attention_choice,
    cpu_fallback,
    cuda_generators,
    cuda_streams,
    recurrent_kernels,
)
from fxcore.worker.devices.accelerator_guard import (
    lazy_init_bindings,
    set_up_no_op_cuda_device_guard,
)
from fxcore.worker.devices.held_tensors import faked_on_cuda, made_on_cuda
from fxcore.worker.meta.to_arguments import read_move

CUDA = torch.device("cuda", 0)
#: The GPU the view answers as: the one the issue's measurements ran on.
GPU = SimpleNamespace(
    name="NVIDIA H100 80GB HBM3", major=9, minor=0, total_memory=85_045_395_456,
    multi_processor_count=132, is_integrated=False, is_multi_gpu_board=False,
    max_threads_per_multi_processor=2048, warp_size=32, L2_cache_size=52_428_800,
    gcnArchName="NVIDIA H100 80GB HBM3", uuid="00000000-0000-0000-0000-000000000000",
    regs_per_multiprocessor=65536, shared_memory_per_block=49152,
    shared_memory_per_block_optin=232448, shared_memory_per_multiprocessor=233472,
)
#: What this view cannot give without a driver, by the call that needs it.
UNSUPPORTED = ("CUDA graphs",)

_active: list[bool] = []
#: What the view entered now cannot answer as a GPU does (a note per gap, worded where its
#: piece is set up), while it is entered so.
_gaps: list[str] = []


def active() -> bool:
    """Whether code runs in the view now."""
    return bool(_active)


def gap_notes() -> list[str]:
    """What the view entered now cannot answer as a GPU does, one note per gap."""
    return list(dict.fromkeys(_gaps))


def _note_gap(stack: contextlib.ExitStack, gap: str | None, note: str) -> None:
    """Keep ``note`` (``{gap}`` filled in) while ``stack`` is open, where there is a gap."""
    if gap is not None:
        _gaps.append(note.format(gap=gap))
        stack.callback(_gaps.pop)


# The answers. Each body runs with the globals of the function whose code it replaces, so it
# names nothing of this module's but through an import; its signature is the original's, so
# that the original's defaults still fit.

def _true(*args: Any, **kwargs: Any) -> bool:
    return True


def _false() -> bool:
    return False


def _one() -> int:
    return 1


def _zero() -> int:
    return 0


def _nothing(*args: Any, **kwargs: Any) -> None:
    return None


def _zero_with_args(*args: Any, **kwargs: Any) -> int:
    return 0


def _capability(device: Any = None) -> tuple[int, int]:
    from fxcore.worker.devices.cuda_view import GPU
    return GPU.major, GPU.minor


def _name(device: Any = None) -> str:
    from fxcore.worker.devices.cuda_view import GPU
    return GPU.name


def _properties(device: Any = None) -> Any:
    from fxcore.worker.devices.cuda_view import GPU
    return GPU


def _memory_info(device: Any = None) -> tuple[int, int]:
    from fxcore.worker.devices.cuda_view import GPU
    return GPU.total_memory, GPU.total_memory


def _accelerator(check_available: bool = False) -> Any:
    import torch
    return torch.device("cuda")


def _random_state(device: Any = "cuda") -> Any:
    import torch
    return torch.zeros(16, dtype=torch.uint8)


def _random_states() -> list[Any]:
    import torch
    return [torch.zeros(16, dtype=torch.uint8)]


def _cudnn_acceptable(tensor: Any) -> bool:
    import torch.backends.cudnn
    return bool(torch._C._get_cudnn_enabled()) and tensor.device.type == "cuda" \
        and tensor.dtype in torch.backends.cudnn.CUDNN_TENSOR_DTYPES


#: (module, function, answer): the functions whose code the view swaps.
_ANSWERS: tuple[tuple[str, str, Callable[..., Any]], ...] = (
    ("torch.cuda", "is_available", _true),
    ("torch.cuda", "is_bf16_supported", _true),
    ("torch.cuda", "device_count", _one),
    ("torch.cuda", "current_device", _zero),
    ("torch.cuda", "set_device", _nothing),
    ("torch.cuda", "synchronize", _nothing),
    # Dynamo refuses to compile while a CUDA graph is captured, and from 2.14 asks the driver
    # whether one is on every frame it compiles where CUDA is available (so in the view).
    ("torch.cuda.graphs", "is_current_stream_capturing", _false),
    ("torch.cuda", "get_device_capability", _capability),
    ("torch.cuda", "get_device_name", _name),
    ("torch.cuda", "get_device_properties", _properties),
    ("torch.cuda.random", "get_rng_state", _random_state),
    ("torch.cuda.random", "get_rng_state_all", _random_states),
    ("torch.cuda.random", "set_rng_state", _nothing),
    ("torch.cuda.random", "set_rng_state_all", _nothing),
    ("torch.cuda.memory", "empty_cache", _nothing),
    ("torch.cuda.memory", "reset_peak_memory_stats", _nothing),
    ("torch.cuda.memory", "memory_allocated", _zero_with_args),
    ("torch.cuda.memory", "max_memory_allocated", _zero_with_args),
    ("torch.cuda.memory", "memory_reserved", _zero_with_args),
    ("torch.cuda.memory", "max_memory_reserved", _zero_with_args),
    ("torch.cuda.memory", "mem_get_info", _memory_info),
    # What dynamo asks of the build's accelerator as it starts each frame (a CPU build has
    # none; the stream it asks for there is cuda_streams').
    ("torch.accelerator", "current_accelerator", _accelerator),
    ("torch.accelerator", "is_available", _true),
    ("torch.accelerator", "device_count", _one),
    ("torch.accelerator", "current_device_index", _zero),
    ("torch.accelerator", "synchronize", _nothing),
    # Whether cuDNN takes a tensor, as a GPU's build answers (nn.LSTM's ``flatten_parameters``
    # asks; a CPU build's answer warns that it has no cuDNN). ``is_available`` and ``version``
    # stay the build's: with cuDNN available, ``cudnn.flags()`` (torch.export's) reads bindings
    # a CPU build lacks.
    ("torch.backends.cudnn", "is_acceptable", _cudnn_acceptable),
    ("torch.cuda.nvtx", "range_push", _zero_with_args),
    ("torch.cuda.nvtx", "range_pop", _zero_with_args),
    ("torch.cuda.nvtx", "range_start", _zero_with_args),
    ("torch.cuda.nvtx", "range_end", _nothing),
    ("torch.cuda.nvtx", "mark", _nothing),
)


def swap_code(stack: contextlib.ExitStack,
              answers: tuple[tuple[str, str, Callable[..., Any]], ...]) -> None:
    """Every function of ``answers`` (module, function, answer) present in this torch runs its
    answer's code while ``stack`` is open; the function objects stay torch's own."""
    for module_name, name, answer in answers:
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        function = getattr(module, name, None)
        if not isinstance(function, FunctionType) or function.__code__.co_freevars:
            continue  # a builtin or a closure here: this release answers it its own way
        original = function.__code__
        # Named as torch's own code: dynamo decides what it skips by the file of the code
        # (``synchronize``, in torch's folder, is a graph break on a GPU).
        function.__code__ = answer.__code__.replace(
            co_filename=original.co_filename, co_name=original.co_name,
            co_qualname=original.co_qualname, co_firstlineno=original.co_firstlineno)
        stack.callback(setattr, function, "__code__", original)


def _no_lazy_init() -> None:
    return None


def _moved(original: Callable[..., Any], name: str) -> Callable[..., Any]:
    """``Tensor.cuda``/``Tensor.to`` for the view (``cuda_view``'s docstring)."""
    def move(self: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if name == "cuda":
            options = {key: value for key, value in kwargs.items()
                       if key in ("non_blocking", "memory_format")}
        else:
            asked = read_move(args, kwargs)
            if asked is None or not asked.goes_to("cuda"):
                return original(self, *args, **kwargs)
            options = {key: value for key, value in (
                ("dtype", asked.dtype), ("non_blocking", asked.non_blocking),
                ("memory_format", asked.memory_format), ("copy", asked.copy))
                if value is not None}

        def rest(tensor: torch.Tensor) -> torch.Tensor:
            return tensor.to(**options) if "dtype" in options or options.get("copy") \
                else tensor

        # A FakeTensor itself, not torch's is_fake: a wrapper of fake tensors (a functional
        # one) has no fake device to set.
        if isinstance(self, FakeTensor):
            if self.device.type == "cuda":
                return rest(self)
            copy = rest(self)
            copy = self.clone() if copy is self else copy
            copy.fake_device = CUDA
            return copy
        if self.is_meta:  # a tensor of an instance built on meta, asked for CUDA
            return made_on_cuda(rest(self))
        mode = _get_current_dispatch_mode()
        if isinstance(mode, FakeTensorMode):
            return move(mode.from_tensor(self), *args, **kwargs)
        # A real tensor outside a fake run (a constant the constructor, or the module as it
        # is imported, made on the CPU): a meta tensor made for CUDA stands for it.
        return made_on_cuda(rest(torch.empty_like(self, device="meta")))

    move.__name__ = name
    return torch._dynamo.disable(move)


@contextlib.contextmanager
def cuda_view() -> Iterator[None]:
    """Run the block in a GPU's view of torch; everything is put back after."""
    # In the worker of a class written for a GPU, never in the zygote (which enters no view).
    gap = set_up_no_op_cuda_device_guard()
    with contextlib.ExitStack() as stack:
        _note_gap(stack, gap, "CUDA has no device guard in this torch ({gap}): indexing, "
                  "nonzero and tolist of CUDA tensors fail here where a GPU runs them.")
        for module, attribute in lazy_init_bindings("cuda"):
            stack.callback(setattr, module, attribute, getattr(module, attribute))
            setattr(module, attribute, _no_lazy_init)
        swap_code(stack, _ANSWERS)
        _note_gap(stack, cuda_streams.streams_in_view(stack),
                  "torch.cuda.Stream and Event are torch's own here ({gap}): making one fails "
                  "where a GPU makes it.")
        swap_code(stack, cuda_streams.ANSWERS)
        _note_gap(stack, attention_choice.choose_as_h100(stack),
                  "{gap}: attention runs as this build runs it on CUDA tensors without a GPU.")
        _note_gap(stack, recurrent_kernels.run_without_cudnn_on_cuda(stack),
                  "{gap}: nn.LSTM, nn.GRU and nn.RNN on CUDA tensors fail here where a GPU "
                  "runs them.")
        _note_gap(stack, cpu_fallback.run_fallback_on_cpu(stack, CUDA), "{gap}.")
        _note_gap(stack, cpu_fallback.copy_constants_on_cpu(stack), "{gap}.")
        _no_device_init(stack)
        _note_gap(stack, cuda_generators.generators_in_view(stack),
                  "torch.Generator(\"cuda\") is refused here ({gap}), where a GPU makes one.")
        faked_on_cuda(stack, CUDA)
        # A fake CUDA tensor's first creation makes a real one when CUDA is available, for
        # backward's sake: in the view it is available, and no real one may be made.
        for name in ("init_gpu_context", "init_cuda_context"):
            if callable(getattr(fake_tensor, name, None)):
                stack.callback(setattr, fake_tensor, name, getattr(fake_tensor, name))
                setattr(fake_tensor, name, _nothing)
        # A fake tensor's copy deep-copies its fake mode too (``Tensor.__deepcopy__`` copies
        # ``__dict__``), and dynamo compiled those copy frames as the user's code after its
        # break at ``copy.deepcopy(x)``: breaks a GPU's tensor, whose ``__dict__`` is empty,
        # never meets. Run eagerly, as the copy of a real tensor is.
        stack.callback(_put_back_deepcopy, FakeTensor.__dict__.get("__deepcopy__"))
        FakeTensor.__deepcopy__ = torch._dynamo.disable(  # type: ignore[method-assign]
            FakeTensor.__deepcopy__)
        for name in ("cuda", "to"):
            original = getattr(torch.Tensor, name)
            own = torch.Tensor.__dict__.get(name)
            stack.callback(_put_back, name, own)
            setattr(torch.Tensor, name, _moved(original, name))
        _active.append(True)
        stack.callback(_active.pop)
        yield


def _no_device_init(stack: contextlib.ExitStack) -> None:
    """Fake tensor modes made in the view avoid a device's initialisation as they do where
    CUDA is unavailable: torch decides it by asking ``torch.cuda.is_available()``, which the
    view answers True, and would then make ``torch.tensor(data, device="cuda")`` a real CUDA
    tensor before faking it ("Found no NVIDIA driver"; on a CPU build, no CUDA kernel). With
    it, the tensor is made on the CPU and its fake copy moved, as on a machine without a GPU."""
    own = FakeTensorMode.__dict__.get("avoid_device_init")
    if not isinstance(own, property):
        return  # a release that decides it otherwise: torch.tensor on CUDA fails as before
    stack.callback(setattr, FakeTensorMode, "avoid_device_init", own)
    FakeTensorMode.avoid_device_init = property(_true)  # type: ignore[method-assign]


def _put_back_deepcopy(own: Any) -> None:
    if own is not None:
        FakeTensor.__deepcopy__ = own  # type: ignore[method-assign]
    else:
        del FakeTensor.__deepcopy__


def _put_back(name: str, own: Any) -> None:
    if own is not None:
        setattr(torch.Tensor, name, own)
    elif name in torch.Tensor.__dict__:
        delattr(torch.Tensor, name)
