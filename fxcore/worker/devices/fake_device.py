"""Runs on fake tensors of the device a class is judged for: a model's weights and inputs as
tensors with a device, a dtype and a shape but no data, made by torch's own
``FakeTensorMode``, so that nothing is computed, no memory is taken for weights and no
hardware is touched. What a class judged for a GPU (``cuda_view``) is run on, in the search
for its inputs and in the compile capture; the export capture fakes its weights itself
(``capture/export/fake.py``), on the same device. A class whose code branches on meta
(``meta_branches``) is run so too, on the CPU's fake tensors where no GPU's view gives a GPU,
and traced by torch.fx with its tensors faked (``faked_while_traced``)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv

from fxcore.worker.devices import cuda_view, meta_branches
from fxcore.worker.devices.held_tensors import held_on_cpu
from fxcore.worker.meta.swapped_tensors import swapped_tensors

CPU = torch.device("cpu")


def judged_device() -> torch.device | None:
    """The device whose fake tensors the class now being judged runs on: a GPU's in the CUDA
    view, the CPU's for a class whose code branches on meta (``meta_branches``), else None
    (meta tensors, or fake CPU ones for real weights, as each run decides)."""
    if cuda_view.active():
        return cuda_view.CUDA
    return CPU if meta_branches.active() is not None else None


def fake_on(mode: FakeTensorMode, tensor: torch.Tensor, device: torch.device) -> FakeTensor:
    """A fake tensor of ``mode`` on ``device`` with ``tensor``'s dtype, shape and strides."""
    meta = tensor if tensor.is_meta else torch.empty_strided(
        tensor.shape, tensor.stride(), dtype=tensor.dtype, device="meta")
    return mode.fake_tensor_converter.from_meta_and_device(mode, meta, device)


def no_gradients(device: torch.device | None) -> str | None:
    """Why weights on ``device`` are faked without ``requires_grad``, if they are: autograd
    asks a CUDA tensor's device for its stream as it records (``InputMetadata``), and with no
    device to ask, torch aborts the process. Without weights that need gradients nothing is
    recorded; what torch.export and torch.compile capture of forward is the same."""
    if device is None or device.type == "cpu":
        return None
    return "weights without requires_grad on a GPU with no hardware"


@contextlib.contextmanager
def on_fake_device(model: torch.nn.Module, device: torch.device, data_sizes: bool = True
                   ) -> Iterator[FakeTensorMode]:
    """A fake tensor mode, active while the block runs, with ``model``'s parameters, buffers
    and tensor attributes swapped for fake tensors on ``device`` (a plain tensor attribute
    made on the default device on the CPU, where ``model.to`` leaves it: ``held_on_cpu``),
    and put back after. Its shape environment gives a size the data decides (``nonzero``, a
    boolean mask) a symbol, as torch.export's and dynamo's modes do, where without one the
    operator raised;
    ``data_sized_outputs`` gives such sizes meta's answer in fx-lsp's own eager runs. Without
    ``data_sizes`` (where that mode cannot be active: compile's eager code before torch
    2.11) the mode has none, and the operator raises: dynamo would otherwise be handed a
    symbol for a size that no real input has."""
    mode = FakeTensorMode(allow_non_fake_inputs=True,
                          shape_env=ShapeEnv() if data_sizes else None)

    def replacement(value: torch.Tensor, attribute: bool) -> torch.Tensor | None:
        if isinstance(value, FakeTensor):
            return None
        # A plain tensor attribute ``model.to(device)`` leaves where it was made.
        on_cpu = attribute and device.type == "cuda" and held_on_cpu(value)
        return fake_on(mode, value, torch.device("cpu") if on_cpu else device)

    with swapped_tensors(model, replacement, gradients=no_gradients(device) is None), mode:
        yield mode


@contextlib.contextmanager
def faked_while_traced(model: torch.nn.Module) -> Iterator[None]:
    """For a class whose code branches on meta, judged for the CPU: ``model``'s parameters,
    buffers and tensor attributes are fake CPU tensors while torch.fx traces it (the block),
    so that what ``forward`` asks of a tensor the tracer does not trace (``self.cache.is_meta``,
    a buffer's slice) it asks of one that is not on meta, as on the CPU; no mode is active,
    so the tracer's proxies record as ever, and what is computed from those tensors eagerly is
    fake by their own mode. After, a constant torch.fx kept on the model (a fake tensor) is
    made meta, as every other tensor of the instance is. Nothing otherwise: in a GPU's view
    torch.fx traces on meta, as for any class judged for one."""
    if meta_branches.active() is None or cuda_view.active():
        yield
        return
    mode = FakeTensorMode(allow_non_fake_inputs=True)

    def replacement(value: torch.Tensor, attribute: bool) -> torch.Tensor | None:
        return None if isinstance(value, FakeTensor) else fake_on(mode, value, CPU)

    try:
        with swapped_tensors(model, replacement):
            yield
    finally:
        meta_branches.as_meta(model)
