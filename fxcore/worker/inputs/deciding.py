"""The inputs stage, between building and capturing: a class's example inputs, decided from
its configuration (``[tool.fx-lsp.modules] inputs``), then ``forward``'s jaxtyping-style
annotations, then inference from the first layers that use each argument
(``graph_layers``), with the sizes those leave free chosen so that the model accepts
them where some size tried does (``sizes``).

Inference reads a graph. Shapes of an fx capture infer from that capture's own graph; a
capture mode that needs inputs to run at all (``capture.base.needs_inputs``: torch.export,
torch.compile) gets them before it captures (``start_search``, ``finish_search``, which
returns them as one ``InputsDecision`` the pipeline passes to the capture), inferred
from a pre-trace with the fx capture that the pipeline runs between the two
(``capture.fx.pre_trace``), whose recovery gives a graph up to and past the places torch.fx
cannot trace. An example the code gives comes before all of these (``declared``: a
Lightning ``example_input_array``, a ``dummy_inputs``, a call in the workspace's tests). Where
inference gives none, from the module's own first layer (``first_layer``),
then several related tensors (``related``), then the shape ``forward`` documents
(``documented``), then a long waveform (``waveform``), then the sizes ``forward``'s operations
fix over symbolic sizes (``symbolic_sizes``), then what recording stand-ins for its arguments
learn of each (``probes``), accepted when the model runs on them. The
fixed-shape searches are first given, beside the required arguments, the optional ones
``forward`` uses without an ``is None`` test, sized from those uses (``needed_optional``).
Arguments annotated as no tensors get literals beside them (``literal_arguments``).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import fx

from fxcore.model.container_spec import InputSpec
from fxcore.model.results import ExampleInputs
from fxcore.worker.inputs.from_forward.container import container_inputs
from fxcore.worker.inputs.from_forward.layouts import layout_inputs
from fxcore.worker.inputs.from_forward.literal_arguments import literal_sets, spelled
from fxcore.worker.inputs.from_forward.needed_optional import needed_numbers, needed_optional
from fxcore.worker.inputs.from_forward.probes import probed_inputs
from fxcore.worker.inputs.from_forward.related import related_inputs
from fxcore.worker.inputs.from_forward.symbolic_sizes import symbolic_inputs
from fxcore.worker.inputs.from_layers.first_layer import LayerInputs, layer_inputs, runs_on
from fxcore.worker.inputs.from_layers.graph_layers import from_annotations, inferred
from fxcore.worker.inputs.from_layers.sizes import Propagated, choose
from fxcore.worker.inputs.from_layers.waveform import waveform_inputs
from fxcore.worker.inputs.given.declared import declared_inputs
from fxcore.worker.inputs.given.documented import documented_inputs
from fxcore.worker.job.capture_target import CaptureTarget
from fxcore.worker.job.inputs_decision import InputsDecision
from fxcore.worker.job.job_context import JobContext
from fxcore.worker.running.budget_clock import Budget


@dataclass
class DecidedInputs:
    """Example inputs and where they came from, or why there are none."""

    inputs: ExampleInputs | None
    specs: Mapping[str, InputSpec]
    note: str | None = None
    #: Shapes propagated on ``specs`` over the graph they were decided from, when choosing
    #: their sizes did (``sizes.ChosenInputs.propagated``).
    propagated: Propagated | None = None
    #: Other input sets the model runs on (``LayerInputs.alternatives``), and what sets
    #: ``specs`` apart from them.
    alternatives: tuple[LayerInputs, ...] = ()
    key_set: str | None = None
    found_by: Mapping[str, str] = field(default_factory=dict)


def decided_inputs(context: JobContext, cls: type, graph_module: fx.GraphModule | None,
                   root: torch.nn.Module | None) -> DecidedInputs:
    """Configured inputs, else annotated ones completed by those inferred from
    ``graph_module`` (``root`` is the instance it was traced from)."""
    configured = context.module_config(cls.__name__).inputs
    if configured:
        return DecidedInputs(ExampleInputs("config", _spelled(configured)), configured)
    annotated = from_annotations(cls.forward)
    templates, note = (inferred(graph_module) if graph_module is not None
                       else ({}, "no graph to infer them from"))
    if note is not None and not annotated:
        return DecidedInputs(None, {}, note)
    origin = "annotation" if annotated else "inferred"
    # In the order of the graph's arguments, annotated ones as they are.
    names = [*templates, *(name for name in annotated if name not in templates)]
    templates = {name: t for name, t in templates.items() if name not in annotated}
    if graph_module is None or not templates:
        return DecidedInputs(ExampleInputs(origin, _spelled(annotated)), annotated)
    chosen = choose(graph_module, templates, annotated, root)
    specs = {name: chosen.specs[name] for name in names}
    return DecidedInputs(ExampleInputs(origin, _spelled(specs), chosen.note), specs,
                         propagated=chosen.propagated)


def given_inputs(inputs: InputsDecision) -> DecidedInputs | None:
    """The inputs decided before a target was captured, if they were."""
    if inputs.specs is None or inputs.origin is None:
        return None
    return DecidedInputs(ExampleInputs(inputs.origin, _spelled(inputs.specs), inputs.note),
                         inputs.specs)


@dataclass(frozen=True)
class InputsSearch:
    """A search for a target's example inputs, begun (``start_search``)."""

    #: The whole search's budget (the worker's CPU time).
    deadline: Budget
    #: Whether the class's inputs are configured: then no graph is needed to infer them.
    configured: bool


def start_search(context: JobContext, target: CaptureTarget) -> InputsSearch:
    """Begin the search for ``target``'s example inputs (once per target: the pipeline keeps
    what it decides for the modes that capture it later, also that it found none)."""
    # One budget for the whole stage, each search also held to its own share: a class that
    # runs on no candidate (a forward listing a fake tensor's values) spent every search's
    # share in turn, more than the class's time-out, before the first capture began. The
    # pre-trace that gives the graph to infer from is within it.
    deadline = Budget(context.job.config.timeout / 2)
    return InputsSearch(deadline, bool(context.module_config(target.cls.__name__).inputs))


def finish_search(context: JobContext, target: CaptureTarget, search: InputsSearch,
                  graph_module: fx.GraphModule | None, root: torch.nn.Module | None
                  ) -> InputsDecision:
    """``target``'s example inputs (and their origin), inferred from ``graph_module`` (the
    pre-trace's, of ``root``; None for configured inputs) where they are not configured.
    Without inputs (``specs`` None) when none can be decided, with what the likeliest
    candidate met: the mode then says why it could not run."""
    deadline, configured = search.deadline, search.configured
    seconds = context.job.config.timeout / 4
    # An example the code gives (``declared``) before any guess; unless configured,
    # inference decides or completes the annotated arguments.
    declared = None if configured else declared_inputs(
        target.cls, target.module, target.instantiated_on, target.concrete_args,
        _left(deadline, seconds), context.root, context.is_workspace_path)
    if isinstance(declared, LayerInputs):
        return InputsDecision(dict(declared.specs), "example", declared.note)
    decided = decided_inputs(context, target.cls, graph_module, root)
    # Arguments annotated as no tensors get literals, a set at a time (``literal_arguments``).
    # An argument the graph already gave a tensor keeps it: its annotation may be loose
    # (``t: int`` given a tensor of time steps).
    sets = [] if configured else literal_sets(target.cls, {**target.concrete_args,
                                                           **decided.specs})
    # Optional arguments forward uses untested with numbers only get one in every set: None
    # raises there on any input (``needed_optional.needed_numbers``).
    numbers = {} if configured else needed_numbers(target.cls, target.module,
                                                   {**target.concrete_args, **decided.specs})
    sets = [{**numbers, **values} for values in sets] or ([numbers] if numbers else [])
    values: dict[str, Any] = sets[0] if sets else {}
    inputs = decided.inputs
    refused: str | None = None
    # Inferred inputs the model does not run on would make its failure fx-lsp's own choice:
    # then, as where no graph told them, the module's own first layer may tell (a branch on
    # the input's shape stops torch.fx before any layer, not export or compile).
    if inputs is None or (inputs.origin == "inferred" and runs_on(
            target.module, target.instantiated_on, decided.specs,
            {**target.concrete_args, **values}, _left(deadline, seconds)) is False):
        # Last without literals, as before they were given: an annotation may be loose.
        for candidate in [*sets, {}] if sets else [{}]:
            found = _searched(context, target, {**target.concrete_args, **candidate},
                              seconds / (len(sets) + 1), deadline)
            if isinstance(found, LayerInputs):
                values = candidate
                note = found.note + _literals_said(values, numbers)
                decided = DecidedInputs(ExampleInputs("inferred", _spelled(found.specs), note),
                                        found.specs, alternatives=found.alternatives,
                                        key_set=found.key_set, found_by=found.found_by)
                break
            # What the likeliest set's likeliest input met: the first set's.
            if found is not None and decided.inputs is None and refused is None:
                refused = found if isinstance(found, str) else None
    if decided.inputs is None:
        return InputsDecision(refused=refused)
    origin = decided.inputs.origin
    return InputsDecision(dict(decided.specs), origin, decided.inputs.note, values, refused,
                          alternatives=tuple(InputsDecision(dict(other.specs), origin,
                                                            other.note, values,
                                                            key_set=other.key_set)
                                             for other in decided.alternatives),
                          key_set=decided.key_set, found_by=dict(decided.found_by))


def _literals_said(values: Mapping[str, Any], numbers: Mapping[str, float]) -> str:
    """The literals given beside the inputs, in the note's words."""
    annotated = {name: value for name, value in values.items() if name not in numbers}
    given = {name: value for name, value in values.items() if name in numbers}
    return (f", with {spelled(annotated)} as annotated" if annotated else "") + (
        f", with {spelled(given)}, which forward needs (its default None is used untested "
        "with numbers)" if given else "")


def _left(deadline: Budget, seconds: float) -> float:
    """``seconds``, or what is left of ``deadline`` when less."""
    return min(seconds, deadline.left())


def _searched(context: JobContext, target: CaptureTarget, concrete_args: dict[str, object],
              seconds: float, deadline: Budget) -> LayerInputs | str | None:
    """The inputs the model's own code and layers tell, else what the likeliest raised; each
    search for at most ``seconds``, all of them until ``deadline``. Optional arguments
    ``forward`` uses untested (``needed_optional``) are given first beside the required ones
    the fixed-shape searches decide, sized from their uses; without them after."""
    needed = needed_optional(target.cls, target.module, concrete_args)
    refused: str | None = None
    if needed:
        given = {name: spec for name, (spec, _) in needed.items()}
        found = _fixed_shape(context, target, {**concrete_args, **given}, seconds, deadline)
        if isinstance(found, LayerInputs):
            return _completed(target.cls, found, needed)
        refused = found if isinstance(found, str) else None
    found = _fixed_shape(context, target, concrete_args, seconds, deadline)
    if not isinstance(found, LayerInputs):
        # Else the sizes forward's operations fix over symbolic sizes, optional arguments
        # searched with the required ones; else what forward's uses of recording stand-ins
        # say each argument is (a dict, a sequence, a tensor), then its sizes so.
        found = symbolic_inputs(target.cls, target.module, target.instantiated_on,
                                concrete_args, _left(deadline, seconds)) \
            or probed_inputs(target.cls, target.module, target.instantiated_on,
                             concrete_args, _left(deadline, seconds)) or found
    if isinstance(found, LayerInputs):
        return found
    # Where forward needs an optional argument, what the search with it met says more.
    return refused or found


def _fixed_shape(context: JobContext, target: CaptureTarget, concrete_args: dict[str, object],
                 seconds: float, deadline: Budget) -> LayerInputs | str | None:
    """The fixed-shape searches in turn: the first inputs found, else what the likeliest
    raised."""
    # A dict, list or tuple of tensors first: tensors tried for it only fail.
    found = container_inputs(target.cls, target.module, target.instantiated_on, concrete_args,
                             _left(deadline, seconds)) \
        or layer_inputs(target.cls, target.module, target.instantiated_on, concrete_args,
                        _left(deadline, seconds), context.is_workspace_path)
    if not isinstance(found, LayerInputs):
        # Several related tensors (a decoder's input and skip connection), searched jointly
        # where each argument's own candidates fit none; else each laid out as the code
        # permutes it for its layer (``layouts``); else the shape forward documents;
        # else a long waveform (an audio front end's FFT or kernel of thousands of samples).
        found = related_inputs(target.cls, target.module, target.instantiated_on, concrete_args,
                               _left(deadline, seconds)) \
            or layout_inputs(target.cls, target.module, target.instantiated_on, concrete_args,
                             _left(deadline, seconds)) \
            or documented_inputs(target.cls, target.module, target.instantiated_on,
                                 concrete_args, _left(deadline, seconds),
                                 context.is_workspace_path) \
            or waveform_inputs(target.cls, target.module, target.instantiated_on, concrete_args,
                               _left(deadline, seconds)) or found
    return found


def _completed(cls: type, found: LayerInputs, needed: Mapping[str, tuple[InputSpec, str]]
               ) -> LayerInputs:
    """``found``'s inputs with the optional ones beside them, in ``forward``'s order."""
    specs = {**found.specs, **{name: spec for name, (spec, _) in needed.items()}}
    order = list(inspect.signature(cls.forward).parameters)
    said = ", ".join(f"{spec} for {name}, sized from its use by {use}"
                     for name, (spec, use) in needed.items())
    return LayerInputs({name: specs[name] for name in sorted(specs, key=order.index)},
                       f"{found.note}; with {said}, which forward needs (its default None "
                       "is used untested)",
                       tuple(_completed(cls, other, needed) for other in found.alternatives),
                       found.key_set)


def _spelled(specs: Mapping[str, InputSpec]) -> dict[str, str]:
    return {name: str(spec) for name, spec in specs.items()}
