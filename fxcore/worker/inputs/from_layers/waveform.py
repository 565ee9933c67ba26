"""Example inputs for a module that takes a waveform, tried where neither its first layers'
sizes nor the plain shapes (``first_layer``) fit: a long 1-d signal, as a batch of signals
``[2, T]`` or of one-channel signals ``[2, 1, T]`` (``[2, C, T]`` where a ``Conv1d``'s
``in_channels`` says ``C``). An audio front end pads by half its FFT size, convolves with
kernels of thousands of taps or unpacks ``batch, channels, time``: 8 or 256 samples are no
audio.

The lengths ``T``, in order: those the module declares, four times each kernel-like length
(an ``n_fft``, ``win_length``, ``filter_length`` or ``kernel_size`` attribute, the last
dimension of a 3-d parameter or buffer: a ``Conv1d`` weight, a registered FFT or filter
kernel) and one second at a sample rate it declares (``sr``, ``sample_rate``); then the usual
lengths longer than those (``STANDARD_LENGTHS``). The error each candidate raises moves the
search on: one that says the signal is too short (``LENGTH_ERRORS``) passes over the other
shapes of that length; one that says how many dimensions were expected (``RANK_ERRORS``)
keeps only shapes of that rank. At most ``MAX_CANDIDATES`` runs, for at most ``MAX_SECONDS``;
one is accepted only when the model runs on it eagerly (meta or fake tensors), as every
inferred input is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from torch import nn

from fxcore.model.results import InstantiatedOn
from fxcore.model.tensor_spec import TensorSpec
from fxcore.worker.inputs.from_layers.first_layer import (
    LayerInputs,
    companions,
    eager_error_before,
    required_arguments,
    stopped_on_meta,
)
from fxcore.worker.meta.values_read import read_note
from fxcore.worker.running.budget_clock import Budget

#: The usual signal lengths: 1024 and 4096 (common FFT and window sizes, and a few frames of
#: them), 16000 (one second at 16 kHz, speech) and 32768 (a long FFT's padding, several
#: seconds of low-rate audio, a CQT's lowest-octave kernel at 22.05 kHz).
STANDARD_LENGTHS = (1024, 4096, 16000, 32768)
#: Attributes whose value is a kernel's or window's length, in samples.
KERNEL_LENGTH_NAMES = frozenset({"n_fft", "win_length", "window_length", "filter_length",
                                 "kernel_size", "kernel_length", "n_window"})
#: Attributes whose value is a sample rate: one second of it is a length to try.
SAMPLE_RATE_NAMES = frozenset({"sr", "sample_rate", "sampling_rate"})
#: A declared kernel length is tried as a signal this many times longer (frames of it).
KERNEL_FRAMES = 4
#: Lengths shorter than this say nothing of a waveform (a 3-tap convolution).
MIN_KERNEL = 32
#: The longest signal tried (about 6 seconds at 44.1 kHz): on meta it costs no memory, and
#: the real-torch check of a verdict runs on it too.
MAX_LENGTH = 2 ** 18
#: The most lengths tried, declared first.
MAX_LENGTHS = 6
#: The most runs for one class, and the most seconds they take.
MAX_CANDIDATES = 32
MAX_SECONDS = 10.0
#: Errors that say the signal is shorter than the module needs (a reflect pad, a kernel
#: longer than its input, a pad wider than the input).
LENGTH_ERRORS = re.compile(
    r"shorter than|too short|greater than (the )?actual input size|"
    r"should be less than the corresponding input dimension|input size .* too small",
    re.IGNORECASE)
#: Errors that say how many dimensions the input should have: unpacking its shape
#: (``b, c, t = x.shape``), or a layer's check.
RANK_ERRORS = re.compile(r"values to unpack \(expected (\d)|expected (\d)D", re.IGNORECASE)


@dataclass(frozen=True)
class _Shape:
    """One shape family tried at every length: its leading dimensions and in words."""

    leading: tuple[int, ...]
    words: str

    def spec(self, length: int) -> TensorSpec:
        return TensorSpec("float32", (*self.leading, length))


def waveform_inputs(cls: type, model: nn.Module, instantiated_on: InstantiatedOn,
                    concrete_args: dict[str, object], seconds: float) -> LayerInputs | None:
    """The first waveform candidate for ``forward``'s first required argument (its others
    companions of it) that the model runs on; None when there is none within the bounds."""
    required = required_arguments(cls, concrete_args)
    if not required:
        return None
    first, *others = required
    shapes = _shapes(model)
    deadline = Budget(min(seconds, MAX_SECONDS))
    runs = 0
    for length, why in _lengths(model):
        tried: set[_Shape] = set()
        while (shape := next((s for s in shapes if s not in tried), None)) is not None:
            tried.add(shape)
            spec = shape.spec(length)
            for companion in companions(spec) if others else [None]:
                runs += 1
                if runs > MAX_CANDIDATES:
                    return None
                specs = {first: spec, **{name: companion for name in others if companion}}
                ran = eager_error_before(deadline, model, instantiated_on, specs, concrete_args)
                if ran is None:
                    return None
                note = (f"none of the first layers' sizes or plain shapes fit {cls.__name__}; "
                        f"as a waveform ({shape.words}, {why}) it runs on {spec}")
                if companion is not None:
                    note += f" for {first}, and {companion} for {', '.join(others)}"
                if not isinstance(ran, Exception):
                    return LayerInputs(specs, note + read_note(ran))
                limit = stopped_on_meta(model, ran)
                if limit is not None:
                    return LayerInputs(specs, note + " as far as the meta device goes (a line "
                                                     f"{limit.what}, which only real data answers)")
                rank = len(shape.leading) + 1 if _too_short(ran) else _rank_expected(ran)
                if rank is not None and any(len(s.leading) + 1 == rank for s in shapes):
                    # Too short says this shape's rank is right; an unpacked shape or a
                    # layer's check says which is: other ranks are not tried again.
                    shapes = [s for s in shapes if len(s.leading) + 1 == rank]
                if _too_short(ran):
                    tried.update(shapes)  # no shape of this length is long enough
                if rank is not None:
                    break  # the companions do not change the rank or the length
    return None


def _shapes(model: nn.Module) -> list[_Shape]:
    """A batch of signals, of one-channel signals, and of as many channels as the first
    ``Conv1d`` takes."""
    shapes = [_Shape((2,), "a batch of signals"), _Shape((2, 1), "a batch of one-channel signals")]
    conv = next((m for m in model.modules() if isinstance(m, nn.Conv1d)), None)
    if conv is not None and conv.in_channels != 1:
        shapes.append(_Shape((2, conv.in_channels),
                             f"{conv.in_channels} channels, as its first Conv1d takes"))
    return shapes


def _lengths(model: nn.Module) -> list[tuple[int, str]]:
    """The lengths tried, each with why: the declared ones, shortest first, then the usual
    ones longer than all of them; ``MAX_LENGTHS`` at most."""
    declared: dict[int, str] = {}
    for path, module in model.named_modules():
        where = f"`{path}`" if path else "the class"
        for name, value in vars(module).items():
            length = _declared_length(value)
            if length is None:
                continue
            if name in KERNEL_LENGTH_NAMES and length >= MIN_KERNEL:
                declared.setdefault(length * KERNEL_FRAMES,
                                    f"{KERNEL_FRAMES} times the {name} {length} of {where}")
            elif name in SAMPLE_RATE_NAMES:
                declared.setdefault(length, f"one second at the {name} {length} of {where}")
        for name, tensor in [*module.named_parameters(recurse=False),
                             *module.named_buffers(recurse=False)]:
            if tensor.dim() == 3 and tensor.shape[-1] >= MIN_KERNEL:
                length = int(tensor.shape[-1])
                declared.setdefault(length * KERNEL_FRAMES,
                                    f"{KERNEL_FRAMES} times the {length} taps of {where}'s "
                                    f"{name}")
    kept = sorted((length, why) for length, why in declared.items() if length <= MAX_LENGTH)
    longest = max((length for length, _ in kept), default=0)
    kept += [(length, "a usual length") for length in STANDARD_LENGTHS if length > longest]
    return kept[:MAX_LENGTHS]


def _declared_length(value: object) -> int | None:
    """An int attribute, or a 1-tuple of one (a ``Conv1d``'s ``kernel_size``)."""
    if isinstance(value, tuple) and len(value) == 1:
        value = value[0]
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 \
        else None


def _too_short(error: Exception) -> bool:
    return LENGTH_ERRORS.search(str(error)) is not None


def _rank_expected(error: Exception) -> int | None:
    found = RANK_ERRORS.search(str(error))
    return int(found.group(1) or found.group(2)) if found else None
