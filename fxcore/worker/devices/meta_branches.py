"""Classes whose code branches on meta, judged on fake tensors of their device instead.

fx-lsp builds a class on the meta device and runs it on meta tensors, where real torch runs it
on the CPU (or a GPU). A class that asks whether its tensors are on meta (``meta_reads``) and
hears yes takes a way the CPU never takes: a rotary embedding that skips
building its cache on meta (``if self.theta.is_meta: return``) and its forward then raises
"RoPE cache is not built", an error only meta meets. Such a class is built again, and judged
in every mode, on fake tensors (torch's ``FakeTensorMode``: a device, a dtype and a shape but
no data, so no memory is taken for weights and nothing is computed), on which ``is_meta`` is
False as on the CPU:

- ``built_on_fake`` runs the constructor under a fake tensor mode, then turns every tensor the
  instance holds into a meta tensor of the same dtype, shape and strides, so that the rest of
  the worker meets an instance built on meta as ever, but one that did the work;
- ``on_fake_tensors`` is the view its captures run in: ``fake_device.judged_device`` is then
  the CPU (where no GPU's view gives a GPU), so that the search for inputs, torch.export and
  torch.compile run it on fake tensors of that device, as a class judged for a GPU is run on
  fake CUDA tensors; torch.fx traces it with its tensors faked (``fake_device``).

Where the fake build fails (a constructor that reads a tensor's values, which fake tensors do
not have), the class has no verdict (``MetaBranch.failure``): one on the meta branch would be
about fx-lsp's device, not the code."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TypeVar

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.utils._pytree import tree_leaves, tree_map_only

from fxcore.worker.devices.held_tensors import any_made_on_cuda, made_on_cuda
from fxcore.worker.meta.literal_values import carry_literal

_T = TypeVar("_T")

#: Why the class judged now is on fake tensors (where its code read meta), innermost last.
_why: list[str] = []


@dataclass
class MetaBranch:
    """Where building or running a class read a tensor as on meta, and what came of building
    it on fake tensors instead."""

    #: The places, in words (``meta_reads.described``).
    read: str
    #: Why building it on fake tensors failed (torch's error, described); None where it built.
    failure: str | None = None

    def no_verdict_reason(self, class_name: str, device: torch.device) -> str:
        """Why the class, judged for ``device``, has no verdict, where the fake build
        failed."""
        kind = _kind(device)
        return (f"{class_name} asks whether its tensors are on the meta device ({self.read}), "
                f"where fx-lsp builds it without weights, and meta answers yes where the {kind} "
                f"answers no; building it on fake tensors instead, as it runs on the {kind}, "
                f"failed ({self.failure}). No verdict rather than one on the way only meta "
                "takes.")


def _kind(device: torch.device) -> str:
    """The device in a note's words: the CPU, a GPU."""
    return "GPU" if device.type == "cuda" else device.type.upper()


def active() -> str | None:
    """Why the class judged now runs on fake tensors (where its code read meta), None when it
    does not."""
    return _why[-1] if _why else None


@contextlib.contextmanager
def on_fake_tensors(why: str) -> Iterator[None]:
    """Judge the class in the block on fake tensors of its device (the module's docstring),
    ``why`` saying where its code read meta."""
    _why.append(why)
    try:
        yield
    finally:
        _why.pop()


def note(why: str, device: torch.device) -> str:
    """What a verdict judged on fake tensors of ``device`` says."""
    tensors = "CUDA" if device.type == "cuda" else device.type.upper()
    return (f"Judged on fake {tensors} tensors, not on meta: its code asks whether its "
            f"tensors are on the meta device ({why}), where fx-lsp builds it, and would take "
            f"another way there than on the {_kind(device)}. Built and captured on tensors "
            "without data, as it runs there; no memory was taken for its weights.")


def built_on_fake(construct: Callable[[], _T]) -> _T:
    """What ``construct`` builds on fake tensors (the CPU's, unless the code asks for a GPU in
    its view), its tensors then made meta ones (``as_meta``); torch's error where it fails."""
    mode = FakeTensorMode(allow_non_fake_inputs=True)
    with mode:
        built = construct()
    return as_meta(built)


def _meta_copy(value: FakeTensor) -> torch.Tensor:
    copy = torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="meta")
    carry_literal(value, copy)  # a flag the constructor set keeps its value
    # A tensor made for a GPU in its view stays one that is judged there (``held_tensors``).
    return made_on_cuda(copy) if value.device.type == "cuda" or any_made_on_cuda(value) \
        else copy


def as_meta(model: _T) -> _T:
    """``model`` (an ``nn.Module``) with each fake tensor it holds (parameters, buffers,
    tensor attributes, and tensors in a list, tuple or dict attribute) replaced by a meta
    tensor of the same dtype, shape and strides: fake tensors belong to the mode that made
    them, which no later run shares. A tensor held twice (tied weights) stays one."""
    if not isinstance(model, torch.nn.Module):
        return model
    made: dict[int, torch.Tensor] = {}

    def meta(value: FakeTensor) -> torch.Tensor:
        if id(value) not in made:
            made[id(value)] = _meta_copy(value)
        return made[id(value)]

    for module in model.modules():
        for name, value in list(module._parameters.items()):
            if isinstance(value, FakeTensor):
                if id(value) not in made:
                    made[id(value)] = torch.nn.Parameter(_meta_copy(value),
                                                         value.requires_grad)
                module._parameters[name] = made[id(value)]  # type: ignore[assignment]
        for name, value in list(module._buffers.items()):
            if isinstance(value, FakeTensor):
                module._buffers[name] = meta(value)
        attributes = vars(module)
        for name, value in list(attributes.items()):
            if isinstance(value, FakeTensor):
                attributes[name] = meta(value)
            elif type(value) in (list, tuple, dict) and any(
                    isinstance(leaf, FakeTensor) for leaf in tree_leaves(value)):
                attributes[name] = tree_map_only(FakeTensor, meta, value)
    return model
