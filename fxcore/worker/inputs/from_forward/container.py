"""Example inputs for ``forward`` arguments that are containers of tensors: a feature pyramid's
``dict[str, Tensor]`` of levels, a ``list[Tensor]``, ``tuple[Tensor, ...]`` or
``Sequence[Tensor]`` of maps that a ``ModuleList`` takes one by one. Which items each holds,
and the layer that takes each, come from ``forward``'s code and the model
(``container_items``); this module searches their sizes.

The free sizes are those of ``first_layer.SIZES_TRIED``; a pyramid's levels halve (as in the
container's order), or double, or are all the same size, tried in that order. A candidate is
accepted only when the model runs on it eagerly, as for tensors (``first_layer``). A dict's
keys ``forward`` reads only where present (``keyed_batch``) are given first, then left out;
where the model runs both ways, the set without them is kept beside
(``LayerInputs.alternatives``), for the captures to take too. A tensor beside the containers
is shaped as the layer it reaches takes it, else (a mask beside a list of steps, which no
layer takes) as a companion of their first item (``companions``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from torch import nn

from fxcore.model.container_spec import ContainerKind, ContainerSpec, InputSpec
from fxcore.model.results import InstantiatedOn
from fxcore.model.tensor_spec import TensorSpec
from fxcore.worker.inputs.eager_runs.candidates import Specs, first_running
from fxcore.worker.inputs.from_forward.container_items import (
    container_items,
    container_kind,
    string_keys,
)
from fxcore.worker.inputs.from_forward.forward_relations import forward_tree
from fxcore.worker.inputs.from_forward.keyed_batch import argument_template, key_uses
from fxcore.worker.inputs.from_layers.first_layer import (
    SIZES_TRIED,
    LayerInputs,
    companions,
    required_arguments,
)
from fxcore.worker.inputs.from_layers.graph_layers import SEQUENCE, FreeSizes, InputTemplate
from fxcore.worker.running.budget_clock import Budget

#: How the sizes of a container's items follow one another: a pyramid's levels halve or double.
PROGRESSIONS = ((0.5, "halving"), (2.0, "doubling"), (1.0, "of one size"))

#: By ``forward`` argument: its kind (None for a tensor beside containers) and its items'
#: keys and templates (a tensor's one, keyed "").
_Items = dict[str, tuple[ContainerKind | None, list[tuple[str, InputTemplate]]]]


def container_inputs(cls: type, model: nn.Module, instantiated_on: InstantiatedOn,
                     concrete_args: dict[str, object], seconds: float) -> LayerInputs | None:
    """Inputs for a ``forward`` whose required arguments include containers of tensors (a
    tensor beside them shaped as the layer it reaches takes it: ``argument_template``), the
    first candidate the model runs on; None when none is a container, an item's or tensor's
    layer cannot be found, none runs, or the search takes longer than ``seconds``."""
    required = required_arguments(cls, concrete_args)
    tree = forward_tree(cls)
    if not required or tree is None:
        return None
    items: _Items = {}
    optional: set[tuple[str, str]] = set()
    kinds = {name: container_kind(cls, name, tree) for name in required}
    if all(kind is None for kind in kinds.values()):
        return None
    for name, kind in kinds.items():
        if kind is None:
            # A tensor beside the containers: shaped as the layer it reaches takes it, else
            # (a mask no layer takes) a companion of the containers' first item.
            template = argument_template(tree, model, name)
            items[name] = (None, [("", template)] if template is not None else [])
            continue
        found = container_items(kind, name, tree, model)
        if found is None:
            return None
        items[name] = (kind, found)
        if kind == "dict":
            optional |= {(name, use.key) for use in key_uses(tree, model, name, string_keys(
                tree, name)) if use.optional}
    deadline = Budget(seconds)
    tried: list[Specs] = []
    keys = ", ".join(repr(key) for _, key in sorted(optional))
    # Keys the code reads only where present: present first, then left out.
    for present in (items, _without(items, optional)) if optional else (items,):
        left_out = "" if present is items else \
            f", the keys it reads only where present left out: {keys}"
        # A Linear takes any leading dimensions: a batch of vectors as well as of sequences.
        for ranked, ranked_words in ((present, ""), (_flattened(present), ", as vectors")):
            found = _first_running(cls, model, instantiated_on, concrete_args, deadline,
                                   ranked, tried)
            if found is None:
                return None
            if not isinstance(found, LayerInputs):
                continue
            if present is not items or not optional:
                return LayerInputs(found.specs, found.note + ranked_words + left_out)
            # Given, the optional keys run a branch that left out they skip, and the other
            # way round: each capture takes both sets where the model runs on both.
            absent = _specs_without(found.specs, optional)
            runs = first_running([(absent, None)], model, instantiated_on, concrete_args,
                                 deadline, tried)
            if runs is None:
                return None
            note = found.note + ranked_words + ", the keys it reads only where present "
            if not runs:
                return LayerInputs(found.specs, f"{note}given: {keys}; left out, it does not run")
            return LayerInputs(found.specs, f"{note}given: {keys}",
                               (LayerInputs(absent, f"{note}left out: {keys}",
                                            key_set=f"with {keys} left out"),),
                               f"with {keys} given")
    return None


def _first_running(cls: type, model: nn.Module, instantiated_on: InstantiatedOn,
                   concrete_args: dict[str, object], deadline: Budget,
                   items: _Items,
                   tried: list[Specs]) -> LayerInputs | bool | None:
    """The first candidate of ``items``' templates the model runs on; False where it runs on
    none, None when ``deadline`` passed. ``tried`` keeps the candidates run, not to run one
    twice."""
    # Only spatial sizes follow one another; items without any are tried once per size.
    spatial = any(template.free_kinds & {"image", "depth", "signal"}
                  for _, found in items.values() for _, template in found)
    # A list indexed in code (``x[self.max_level - level]``) may hold its levels in the
    # reverse of its layers' order: deepest first.
    candidates = ((specs, (words, reversed_words, companion))
                  for sizes in SIZES_TRIED
                  for factor, words in (PROGRESSIONS if spatial else ((1.0, ""),))
                  for order, reversed_words in ((1, ""), (-1, ", in reverse order"))
                  for specs, companion in _with_companions(
                      _sized(items, sizes, factor, order)))
    found = first_running(candidates, model, instantiated_on, concrete_args, deadline, tried)
    if not found:
        return found
    specs, (words, reversed_words, companion) = found
    sized = f", their spatial sizes {words}" if words else ""
    besides = f", {companion} beside them, the first companion of their first item the " \
        "model runs on" if companion is not None else ""
    return LayerInputs(specs, (
        f"containers of tensors, each item shaped as the first layer whose input size is "
        f"known of the submodule that takes it{reversed_words}{sized}{besides}, which "
        f"{cls.__name__} runs on"))


def _sized(items: _Items, sizes: FreeSizes, factor: float,
           order: int) -> dict[str, InputSpec | None]:
    """One candidate: each argument's spec at ``sizes``, a container's items in ``order``
    (-1: reversed) with their spatial sizes times ``factor`` from one item to the next; None
    for a tensor no layer sizes."""
    specs: dict[str, InputSpec | None] = {}
    for name, (kind, found) in items.items():
        if kind is None:
            specs[name] = found[0][1].spec(sizes) if found else None
        else:
            specs[name] = ContainerSpec(kind, tuple(
                (key, template.spec(scaled_sizes(sizes, factor ** index)))
                for index, (key, template) in enumerate(_ordered(kind, found, order))))
    return specs


def _with_companions(specs: dict[str, InputSpec | None]
                     ) -> Iterator[tuple[Specs, TensorSpec | None]]:
    """``specs`` with the tensors no layer sizes (None: a mask beside a list of steps) as each
    companion (``first_layer.companions``) of the containers' first item in turn."""
    first = next((item for spec in specs.values() if isinstance(spec, ContainerSpec)
                  for _, item in spec.items), None)
    for companion in companions(first) if None in specs.values() and first else [None]:
        yield {name: spec or companion for name, spec in specs.items()}, companion


def _without(items: _Items, keys: set[tuple[str, str]]) -> _Items:
    """``items`` without the dict keys ``keys`` (argument, key)."""
    return {name: (kind, [(key, template) for key, template in found
                          if (name, key) not in keys]) for name, (kind, found) in items.items()}


def _specs_without(specs: Specs, keys: set[tuple[str, str]]) -> Specs:
    """``specs`` with the dict keys ``keys`` (argument, key) left out."""
    return {name: ContainerSpec(spec.kind, tuple(
        (key, item) for key, item in spec.items if (name, key) not in keys))
        if isinstance(spec, ContainerSpec) and spec.kind == "dict" else spec
        for name, spec in specs.items()}


def _flattened(items: _Items) -> _Items:
    """``items`` with each template of a Linear-like layer (any leading dimensions: a free
    ``SEQUENCE`` the layer does not take as one) as a batch of vectors."""
    def flat(template: InputTemplate) -> InputTemplate:
        if template.sequence_known or len(template.dims) != 3 or template.dims[1] != SEQUENCE:
            return template
        return InputTemplate(template.dtype, (template.dims[0], template.dims[2]))

    return {name: (kind, [(key, flat(template)) for key, template in found])
            for name, (kind, found) in items.items()}


def _ordered(kind: ContainerKind | None, found: list[tuple[str, InputTemplate]],
             order: int) -> list[tuple[str, InputTemplate]]:
    """A list's or tuple's templates in ``order`` (-1: reversed), its positions kept."""
    if order == 1 or kind == "dict":
        return found
    return [(key, template) for (key, _), (_, template) in zip(found, found[::-1], strict=True)]


def scaled_sizes(sizes: FreeSizes, factor: float) -> FreeSizes:
    """``sizes`` with their spatial sizes (not a sequence's length) times ``factor``."""
    def scaled(size: int) -> int:
        return max(1, round(size * factor))

    return replace(sizes, image=(scaled(sizes.image[0]), scaled(sizes.image[1])),
                   depth=scaled(sizes.depth), signal=scaled(sizes.signal))
