"""Example inputs read from the module itself, for when no graph tells them: the fx pre-trace
stopped before the first layer, or gave no graph to read (``graph_layers`` reads a
graph). The first layer in registration order whose input size is known (the same table,
``graph_layers.layer_template``), then the next ones that take other sizes (a wrapper
registers the module it wraps before its own projection), decide the class's first required
``forward`` argument; containers and layers that only reshape are passed over, since they say
nothing. Every other
required argument (a mask, indices, a second stream) gets a companion of that input: its
shape, its shape without the last dimension (an attention mask over a sequence), or its batch
alone, as floats, booleans or integer indices, the same for each. A module with no such layer
(elementwise operations, a pooling layer, an activation written as an autograd Function) says
nothing of its input's size because it takes any: a few plain shapes of increasing rank are
tried instead, as they are after every size of the first layer where none fits (a forward
that rearranges its input in code before that layer, TwinsSVT's patch embedding). Layers that
only reshape before the first layer (an einops ``Rearrange``, an ``nn.Unfold``) are worked
back (``reshape``). A candidate is accepted only when the model runs on it eagerly (on
meta, or on fake tensors for real weights), within a time limit: needing no capture, this
serves every mode. Values the run reads from tensor data are stood in (``eager_run``), and the
note names the lines that read them. A run on meta that stops where only real data goes on
(``meta_limits``: ``nonzero`` in a detection model's box filtering, say) ran as far as meta can
tell, and accepts its candidate: the captures run on fake tensors, which go on there.
"""

from __future__ import annotations

import inspect
import itertools
import os
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field

from torch import nn

from fxcore.model.container_spec import InputSpec
from fxcore.model.results import InstantiatedOn
from fxcore.model.tensor_spec import TensorSpec
from fxcore.worker.devices.fake_device import judged_device
from fxcore.worker.devices.held_tensors import fails_by_held_tensor
from fxcore.worker.inputs.eager_runs.eager_run import run_eagerly
from fxcore.worker.inputs.from_layers.graph_layers import FreeSizes, InputTemplate, layer_template
from fxcore.worker.inputs.from_layers.reshape import (
    is_rearrange,
    is_unfold,
    rearranged_inputs,
    unfolded_inputs,
)
from fxcore.worker.job.input_refusals import refusal_seen
from fxcore.worker.job.job_context import describe_exception, first_line
from fxcore.worker.meta.meta_limits import MetaLimit, needs_real_data
from fxcore.worker.meta.values_read import Place, read_note
from fxcore.worker.running.budget_clock import Budget
from fxcore.worker.running.time_limit import OutOfTime
from fxcore.worker.source.locate import traceback_positions

#: How many of the first layers whose input size is known decide candidates, in order: the
#: first registered is not always the first the input meets (a wrapper's ``self.fn`` set
#: before its own projection).
LAYERS_TRIED = 3
#: The free sizes tried, in order: the defaults inference uses, then larger ones (a model
#: that pools five times needs at least 32, a patch embedding a multiple of its patch), up to
#: the usual image sizes 224 and 256 (windows of 64 after a stride of 4).
SIZES_TRIED = (FreeSizes(), FreeSizes(image=(64, 64), depth=16, signal=64, sequence=16),
               FreeSizes(image=(224, 224), depth=16, signal=256, sequence=64),
               FreeSizes(image=(256, 256), depth=16, signal=256, sequence=64))
#: The inputs tried, in order, for a module none of whose layers tells its input's size, or
#: that none of its first layer's sizes fit: a batch of vectors, of sequences, of images, of
#: images of the usual size (a model that downsamples 32 times into windows of 7), and last a
#: batch of scalars (a diffusion model's time steps, embedded before any layer sees them).
PLAIN_SHAPES = ((2, 8), (2, 8, 16), (2, 3, 32, 32), (2, 3, 224, 224), (2,))
#: The most characters of an error's first line that a refusal quotes.
REFUSAL_LENGTH = 200
#: The dtypes of a companion input, in order: values (a second stream, a float mask), a
#: boolean mask, integer indices.
COMPANION_DTYPES = ("float32", "bool", "int64")


@dataclass(frozen=True)
class LayerInputs:
    """The inputs found, and how (``ExampleInputs.note``)."""

    specs: Mapping[str, InputSpec]
    note: str
    #: Other input sets the model runs on that each capture takes too: a dict argument's
    #: keys ``forward`` reads only where present, left out (``container``).
    alternatives: tuple[LayerInputs, ...] = ()
    #: Where there are alternatives, what sets each set apart ("with 'mask' given").
    key_set: str | None = None
    #: How each argument was found, by argument, where a search says (``probes``).
    found_by: Mapping[str, str] = field(default_factory=dict)


def required_arguments(cls: type, concrete_args: dict[str, object]) -> list[str] | None:
    """The names of ``forward``'s arguments that have no default and are not fixed by
    ``concrete-args``, ``*args``/``**kwargs`` passed on left empty (``forward(self, x,
    **kwargs)`` of a wrapper); None when ``forward`` names no argument of its own beside them,
    or cannot be read."""
    try:
        parameters = list(inspect.signature(cls.forward).parameters.values())[1:]
    except (TypeError, ValueError):
        return None
    named = [p for p in parameters if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    if not named and parameters:
        return None
    return [p.name for p in named
            if p.default is inspect.Parameter.empty and p.name not in concrete_args]


def known_layers(model: nn.Module) -> list[tuple[str, nn.Module, InputTemplate]]:
    """The first ``LAYERS_TRIED`` submodules, in registration order, whose input size is known,
    each taking other sizes than those before it."""
    found: list[tuple[str, nn.Module, InputTemplate]] = []
    for path, module in model.named_modules():
        template = layer_template(module)
        if template is not None and all(template != other for _, _, other in found):
            found.append((path or "the class itself", module, template))
            if len(found) == LAYERS_TRIED:
                break
    return found


def reshaped_first(model: nn.Module, before: str) -> list[tuple[str, nn.Module]]:
    """The layers that only reshape (an einops ``Rearrange``, an ``nn.Unfold``) registered
    just before the submodule at ``before`` (the first whose input size is known), the
    nearest last, others between them passed over: what the model's input goes through first
    (a patch embedding)."""
    found: list[tuple[str, nn.Module]] = []
    for path, module in model.named_modules():
        if path == before:
            return found[-2:] if len(found) > 1 and is_unfold(found[-2][1]) \
                and is_rearrange(found[-1][1]) else found[-1:]
        if is_rearrange(module) or is_unfold(module):
            found.append((path, module))
    return []


def _worked_back(reshaping: list[tuple[str, nn.Module]],
                 template: InputTemplate) -> list[TensorSpec]:
    """The specs that ``reshaping``'s layers (a Rearrange, an Unfold, or an Unfold then a
    Rearrange: ``reshaped_first``) make into what ``template`` takes."""
    layers = [layer for _, layer in reshaping]
    if is_rearrange(layers[-1]):
        specs = rearranged_inputs(layers.pop(), template.dims, template.dtype)
    else:
        specs = [template.spec(sizes) for sizes in SIZES_TRIED]
    if layers and isinstance(layers[0], nn.Unfold):
        specs = [spec for output in specs for spec in unfolded_inputs(layers[0], output)]
    return list(dict.fromkeys(specs))


@dataclass(frozen=True)
class _Candidate:
    """A spec tried for the first required argument, and where it comes from."""

    spec: TensorSpec
    #: As a refusal names it (``from `norm` (LayerNorm), the first layer whose input size is
    #: known``, ``a plain shape``).
    origin: str
    #: The words of ``ExampleInputs.note`` before the spec.
    note: str


def _candidates(cls: type, model: nn.Module) -> list[_Candidate]:
    """The specs tried for the first required argument, in order."""
    layers = known_layers(model)
    plain_note = (f"no layer of {cls.__name__} tells its input's size, and it runs on this "
                  "plain shape: " if not layers else
                  f"none of the sizes its first known layers take fit {cls.__name__}, and it "
                  "runs on this plain shape: ")
    candidates: list[_Candidate] = []
    for index, (path, layer, template) in enumerate(layers):
        origin = (f"from `{path}` ({type(layer).__name__}), the "
                  f"{'first' if index == 0 else 'next'} layer whose input size is known")
        specs = list(dict.fromkeys(template.spec(sizes) for sizes in SIZES_TRIED))
        if isinstance(layer, (nn.Linear, nn.LayerNorm)):
            # Both take any leading dimensions: a forward may fold one more into the batch
            # (frames of a video, windows of an image: ``b f n d -> (b f) n d``).
            first = specs[0]
            specs.append(TensorSpec(first.dtype, (first.shape[0], 4, *first.shape[1:])))
        reshaping = reshaped_first(model, path) if index == 0 else []
        if reshaping:
            through = "worked back through " + ", ".join(
                f"`{name}` ({_described(step)})" for name, step in reshaping) + f" {origin}"
            candidates += [_Candidate(spec, through, f"{through}, which {cls.__name__} runs on: ")
                           for spec in _worked_back(reshaping, template)]
        candidates += [_Candidate(spec, origin, f"{origin}, which {cls.__name__} runs on: ")
                       for spec in specs]
    return candidates + [_Candidate(TensorSpec("float32", shape), "a plain shape", plain_note)
                         for shape in PLAIN_SHAPES]


def _described(layer: nn.Module) -> str:
    if is_rearrange(layer):
        return f"Rearrange '{getattr(layer, 'pattern', '')}'"
    return repr(layer)


def layer_inputs(cls: type, model: nn.Module, instantiated_on: InstantiatedOn,
                 concrete_args: dict[str, object], seconds: float,
                 is_workspace_path: Callable[[str], bool]) -> LayerInputs | str | None:
    """The inputs of a class's required ``forward`` arguments: the first from its first layer
    whose input size is known (or, without one, a plain shape), the others its companions, as
    the first of ``SIZES_TRIED`` (``PLAIN_SHAPES``) and of the companions the model runs on.
    Where the model runs on none of them: what the first, most likely one raised, at the
    innermost line of the workspace it passed (a model that cannot run at all says so
    there). None when there is no required argument or the search takes longer than
    ``seconds``."""
    required = required_arguments(cls, concrete_args)
    if not required:
        return None
    (first, *others) = required
    deadline = Budget(seconds)
    refusal: str | None = None
    for candidate in _candidates(cls, model):
        for companion in companions(candidate.spec) if others else [None]:
            specs = {first: candidate.spec,
                     **{name: companion for name in others if companion}}
            ran = eager_error_before(deadline, model, instantiated_on, specs, concrete_args)
            if ran is None:
                return None
            if not isinstance(ran, Exception):
                return LayerInputs(specs, _note(candidate, first, others, companion)
                                   + read_note(ran))
            limit = stopped_on_meta(model, ran)
            if limit is not None:
                return LayerInputs(specs, _note(candidate, first, others, companion)
                                   + f" as far as the meta device goes (a line {limit.what}, "
                                     "which only real data answers)")
            refusal = refusal or (f"{candidate.spec} {candidate.origin}, "
                                  f"{raised(ran, is_workspace_path)}")
    return refusal


def raised(error: BaseException, is_workspace_path: Callable[[str], bool]) -> str:
    """``raised ValueError: ... at file.py:12``: a refused input's error, for the note."""
    return (f"raised {_shortened(first_line(describe_exception(error)))}"
            f"{raised_at(error, is_workspace_path)}")


def _shortened(line: str) -> str:
    return line if len(line) <= REFUSAL_LENGTH else line[:REFUSAL_LENGTH - 1] + "…"


def raised_at(error: BaseException, is_workspace_path: Callable[[str], bool]) -> str:
    """`` at file:line`` of the innermost frame of the workspace that the error passed, or
    nothing."""
    frames = [position for position in traceback_positions(error.__traceback__)
              if is_workspace_path(position.filename)]
    if not frames:
        return ""
    return f" at {os.path.basename(frames[-1].filename)}:{frames[-1].line}"


def companions(spec: TensorSpec) -> Iterator[TensorSpec]:
    """The shapes another argument beside an input of ``spec`` may take, most likely first:
    the same shape, without the last dimension, the batch alone; each in each of
    ``COMPANION_DTYPES``."""
    shapes = list(dict.fromkeys(shape for shape in (spec.shape, spec.shape[:-1], spec.shape[:1])
                                if shape))
    for dtype in COMPANION_DTYPES:
        for shape in shapes:
            yield TensorSpec(dtype, shape)


def _note(candidate: _Candidate, first: str, others: list[str],
          companion: TensorSpec | None) -> str:
    note = f"{candidate.note}{candidate.spec}"
    if companion is not None:
        note += (f" for {first}, and {companion} for {', '.join(others)}, the first companion "
                 "of it the model runs on")
    return note


def eager_error(model: nn.Module, instantiated_on: InstantiatedOn, specs: Mapping[str, InputSpec],
                concrete_args: dict[str, object], seconds: float) -> Exception | list[Place]:
    """What ``model`` raises when run eagerly on tensors of ``specs`` (on meta, or fake tensors
    for real weights), or, when it runs, the lines whose values read from tensor data were
    stood in; ``OutOfTime`` after ``seconds``."""
    def run() -> list[Place]:
        return run_eagerly(model, instantiated_on, specs, concrete_args, seconds)

    try:
        return run()
    except Exception as error:  # user code may raise anything: these inputs do not fit
        if judged_device() is not None and fails_by_held_tensor(model, error, run):
            return []  # it fails so on a GPU whatever its inputs: the captures say where
        refusal_seen(specs, error)
        return error


def eager_error_before(deadline: Budget, model: nn.Module, instantiated_on: InstantiatedOn,
                       specs: Mapping[str, InputSpec], concrete_args: dict[str, object]
                       ) -> Exception | list[Place] | None:
    """``eager_error`` with what is left of ``deadline`` (``budget_clock``); None when
    nothing is left, or the run outlasts it."""
    left = deadline.left()
    if left <= 0:
        return None
    try:
        return eager_error(model, instantiated_on, specs, concrete_args, left)
    except OutOfTime:
        return None


def stopped_on_meta(model: nn.Module, error: Exception) -> MetaLimit | None:
    """What only real data answers, where ``error`` ended a run on meta weights there."""
    weight = next(itertools.chain(model.parameters(), model.buffers()), None)
    return needs_real_data(error) if weight is not None and weight.is_meta else None


def runs_on(model: nn.Module, instantiated_on: InstantiatedOn, specs: Mapping[str, InputSpec],
            concrete_args: dict[str, object], seconds: float) -> bool | None:
    """Whether ``model`` runs eagerly on tensors of ``specs`` (on meta, or fake tensors for
    real weights), on meta as far as meta goes; None when it takes longer than ``seconds``."""
    try:
        ran = eager_error(model, instantiated_on, specs, concrete_args, seconds)
    except OutOfTime:
        return None
    return not isinstance(ran, Exception) or stopped_on_meta(model, ran) is not None
