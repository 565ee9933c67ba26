"""Sizes for the dimensions inferred inputs leave free (``graph_layers.InputTemplate``): the
image size the model declares, else the defaults; when the model does not accept those (shape
propagation meets a mismatch), the first of a short, fixed list of candidate sizes that it
accepts, tried on meta tensors. So a shape error on inferred inputs (FX300) is reported only
when no size tried fits, and then says which were tried. Runs in the worker.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
from torch import fx, nn

from fxcore.model.tensor_spec import TensorSpec
from fxcore.worker.inputs.from_layers.graph_layers import (
    LENGTH,
    SEQUENCE,
    DeclaredSize,
    FreeSizes,
    InputTemplate,
    declared_size,
)
from fxcore.worker.meta.shapes import ShapeError, propagate

#: Image sizes (and 3d depths, 1d lengths) tried, in order, when the first sizes do not fit:
#: common input sizes, smallest first so that a real run on the chosen inputs stays cheap.
SPATIAL_CANDIDATES = (32, 64, 128, 224, 299, 512)
#: Sequence lengths tried after the model's own sizes (``_model_sizes``).
SEQUENCE_CANDIDATES = (16, 32, 64, 128)
#: How many of the model's own sizes are tried as sequence lengths.
MODEL_SIZES = 4

Propagated = tuple[dict[str, str], ShapeError | None]


@dataclass
class ChosenInputs:
    specs: dict[str, TensorSpec]
    #: How the free sizes were chosen (declared, solved, none fits); None for the defaults.
    note: str | None
    #: Shapes propagated on ``specs`` (node name -> shape, and where propagation stopped);
    #: None when propagation raised.
    propagated: Propagated | None


def choose(graph_module: fx.GraphModule, templates: dict[str, InputTemplate],
           fixed: dict[str, TensorSpec], root: nn.Module | None) -> ChosenInputs:
    """Specs of ``templates`` (with ``fixed``, such as annotated inputs, as they are), with
    the first sizes the model accepts; ``root`` is the traced instance (its attributes
    declare sizes)."""
    kinds = set().union(*(template.free_kinds for template in templates.values()))
    declared = _declared(templates, root if root is not None else graph_module) \
        if "image" in kinds else None
    first = FreeSizes(image=declared.image) if declared is not None else FreeSizes()

    def specs_with(sizes: FreeSizes) -> dict[str, TensorSpec]:
        return {**{name: t.spec(sizes) for name, t in templates.items()}, **fixed}

    specs = specs_with(first)
    declared_note = (f"image size {first.describe({'image'})} declared by the model "
                     f"({declared.source})" if declared is not None else None)
    try:
        propagated = propagate(graph_module, specs)
    except Exception:  # a model may hold anything; the caller's propagation says why
        return ChosenInputs(specs, declared_note, None)
    if not _mismatch(propagated):
        return ChosenInputs(specs, declared_note, propagated)
    if not kinds:
        return ChosenInputs(specs, "the inferred inputs leave no size free to try others",
                            propagated)
    tried = [first]
    for sizes in _candidates(kinds, first, graph_module):
        candidate = specs_with(sizes)
        try:
            found = propagate(graph_module, candidate)
        except Exception:  # as above: this candidate cannot be judged
            continue
        if not _mismatch(found):
            return ChosenInputs(candidate, _solved_note(sizes, tried, kinds, declared), found)
        tried.append(sizes)
    flat = _without_sequence_axis(templates)
    if flat is not None:
        candidate = {**{name: t.spec(first) for name, t in flat.items()}, **fixed}
        try:
            found = propagate(graph_module, candidate)
        except Exception:  # as above
            found = None
        if found is not None and not _mismatch(found):
            return ChosenInputs(candidate, "no sequence axis: the model accepts none of "
                                + _listed(tried, kinds, declared), found)
    return ChosenInputs(specs, "no size tried fits the model: "
                        + _listed(tried, kinds, declared), propagated)


def _without_sequence_axis(templates: dict[str, InputTemplate]
                           ) -> dict[str, InputTemplate] | None:
    """The templates with their sequence axis left out (``[batch, features]`` for a Linear's
    ``[batch, sequence, features]``), or None when none has one. A Linear takes any number of
    leading axes, so the first layers alone cannot tell whether the model wants one: a
    forward that goes on with 2-D operations (``mm``, ``BatchNorm1d``) accepts only none."""
    if not any(SEQUENCE in template.dims for template in templates.values()):
        return None
    return {name: dataclasses.replace(template, dims=tuple(
                dim for dim in template.dims if dim != SEQUENCE))
            for name, template in templates.items()}


def _mismatch(propagated: Propagated) -> bool:
    error = propagated[1]
    return error is not None and error.is_mismatch


def _declared(templates: dict[str, InputTemplate], root: nn.Module) -> DeclaredSize | None:
    """The declared image size, unless it names channels no image input has."""
    declared = declared_size(root)
    if declared is None or declared.channels is None:
        return declared
    images = [t for t in templates.values() if "image" in t.free_kinds]
    return declared if any(t.dims[1] == declared.channels for t in images) else None


def _solved_note(chosen: FreeSizes, tried: list[FreeSizes], kinds: set[str],
                 declared: DeclaredSize | None) -> str:
    verb = "does" if len(tried) == 1 else "do"
    return (f"{chosen.describe(kinds)}: the first size tried that the model accepts "
            f"({_listed(tried, kinds, declared)} {verb} not fit)")


def _listed(tried: list[FreeSizes], kinds: set[str], declared: DeclaredSize | None) -> str:
    """``299x299 (declared by ...), 32x32, 64x64``; one kind's sizes without repeated words
    (``sequence lengths 8, 16``)."""
    words = [sizes.describe(kinds) for sizes in tried]
    if kinds == {"sequence"} and len(tried) > 1:
        words = [f"sequence lengths {tried[0].sequence}", *(str(s.sequence) for s in tried[1:])]
    elif kinds == {"signal"} and len(tried) > 1:
        words = [f"lengths {tried[0].signal}", *(str(s.signal) for s in tried[1:])]
    if declared is not None:
        words[0] += f" (declared by {declared.source})"
    return ", ".join(words)


def _candidates(kinds: set[str], first: FreeSizes, graph_module: fx.GraphModule
                ) -> list[FreeSizes]:
    """The sizes to try after ``first``, in order, each kind of free size varied alone (a
    video's frames before its length)."""
    found = []
    for kind in ("image", "depth", "signal"):
        if kind in kinds:
            found += [dataclasses.replace(first, **{kind: (size, size) if kind == "image"
                                                    else size})
                      for size in SPATIAL_CANDIDATES]
    if "sequence" in kinds:
        found += [dataclasses.replace(first, sequence=size)
                  for size in (*_model_sizes(graph_module), *SEQUENCE_CANDIDATES)]
    return [sizes for index, sizes in enumerate(found)
            if sizes != first and sizes not in found[:index]]


def _model_sizes(graph_module: fx.GraphModule) -> list[int]:
    """The first sizes the model fixes that a sequence axis may have to match, in graph
    order: a ``Linear``'s ``in_features`` (applied over a transposed sequence axis, as an
    MLP-Mixer's token MLP is), a ``Conv1d``'s ``in_channels``, the dimensions of a tensor
    attribute (a positional embedding)."""
    sizes: list[int] = []
    for node in graph_module.graph.nodes:
        values: list[object] = []
        if node.op == "call_module":
            module = graph_module.get_submodule(str(node.target))
            if isinstance(module, nn.Linear) and not isinstance(module, nn.LazyLinear):
                values = [module.in_features]
            elif type(module) is nn.Conv1d:
                values = [module.in_channels]
        elif node.op == "get_attr":
            value: object = graph_module
            for part in str(node.target).split("."):
                value = getattr(value, part, None)
            values = list(value.shape) if isinstance(value, torch.Tensor) else []
        for size in values:
            if type(size) is int and size > 1 and size != LENGTH and size not in sizes:
                sizes.append(size)
                if len(sizes) == MODEL_SIZES:
                    return sizes
    return sizes
