"""Example inputs for ``forward`` arguments that are containers of tensors: a feature pyramid's
``dict[str, Tensor]`` of levels, a ``list[Tensor]``, ``tuple[Tensor, ...]`` or
``Sequence[Tensor]`` of maps that a ``ModuleList`` takes one by one. The kind comes from the
annotation, else from the code (``x["image"]`` in ``forward`` makes ``x`` a dict); the keys and
the length, and the layer that takes each item, from ``forward``'s code and the model:

- a dict's keys are the strings ``forward`` indexes it with (``x["image"]``, ``x.get("text")``),
  each taken by the submodule it is passed to (``self.image(x["image"])``); without such
  strings, the keys of the ``ModuleDict`` ``forward`` indexes with the same variable
  (``self.lateral[name](features[name])``), else of the model's first ``ModuleDict``, each
  item taken by the submodule of its key, else the positions of its first ``ModuleList``
  (a dict only iterated: ``list(x.values())``);
- a list's or tuple's items are those of the ``ModuleList`` (or ``ModuleDict``) it is zipped
  with (``zip(features, self.projections)``), else the positions ``forward`` indexes it with
  (``self.head(xs[0])``), else the items of the model's first ``ModuleList``.

Each item's shape is that of the first layer of its submodule whose input size is known
(``graph_layers.layer_template``), the free sizes those of ``first_layer.SIZES_TRIED``; a
pyramid's levels halve (as in the container's order), or double, or are all the same size,
tried in that order. A candidate is accepted only when the model runs on it eagerly, as for
tensors (``first_layer``). A dict's keys ``forward`` reads only where present
(``keyed_batch``) are given first, then left out; where the model runs both ways, the set
without them is kept beside (``LayerInputs.alternatives``), for the captures to take too. A
tensor beside the containers is shaped as the layer it reaches takes it, else (a mask beside a
list of steps, which no layer takes) as a companion of their first item (``companions``).
"""

from __future__ import annotations

import ast
import collections.abc
import typing
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from torch import nn

from fxcore.model.container_spec import ContainerKind, ContainerSpec, InputSpec
from fxcore.model.results import InstantiatedOn
from fxcore.model.tensor_spec import TensorSpec
from fxcore.worker.inputs.candidates import Specs, first_running
from fxcore.worker.inputs.first_layer import (
    SIZES_TRIED,
    LayerInputs,
    companions,
    known_layers,
    required_arguments,
)
from fxcore.worker.inputs.forward_relations import forward_tree, submodule
from fxcore.worker.inputs.graph_layers import (
    BATCH,
    HEIGHT,
    SEQUENCE,
    WIDTH,
    FreeSizes,
    InputTemplate,
)
from fxcore.worker.inputs.keyed_batch import argument_template, key_uses
from fxcore.worker.shared.budget_clock import Budget

_DICTS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)
_SEQUENCES = (list, collections.abc.Sequence, collections.abc.MutableSequence)
#: The keys of a dict that ``forward`` only iterates, each value taken by the same submodule.
GENERIC_KEYS = ("0", "1")
#: An item's shape where neither its taker nor the model has a sized layer.
PLAIN_IMAGE = InputTemplate("float32", (BATCH, 3, HEIGHT, WIDTH))
#: How the sizes of a container's items follow one another: a pyramid's levels halve or double.
PROGRESSIONS = ((0.5, "halving"), (2.0, "doubling"), (1.0, "of one size"))


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
        found = _items(kind, name, tree, model)
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
                  for specs, companion in _with_companions({
                      name: None if not found else found[0][1].spec(sizes) if kind is None
                      else ContainerSpec(kind, tuple(
                          (key, template.spec(scaled_sizes(sizes, factor ** index)))
                          for index, (key, template) in enumerate(
                              _ordered(kind, found, order))))
                      for name, (kind, found) in items.items()}))
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


def _with_companions(specs: dict[str, InputSpec | None]
                     ) -> Iterator[tuple[Specs, TensorSpec | None]]:
    """``specs`` with the tensors no layer sizes (None: a mask beside a list of steps) as each
    companion (``first_layer.companions``) of the containers' first item in turn."""
    first = next((item for spec in specs.values() if isinstance(spec, ContainerSpec)
                  for _, item in spec.items), None)
    for companion in companions(first) if None in specs.values() and first else [None]:
        yield {name: spec or companion for name, spec in specs.items()}, companion


#: By ``forward`` argument: its kind (None for a tensor beside containers) and its items'
#: keys and templates (a tensor's one, keyed "").
_Items = dict[str, tuple[ContainerKind | None, list[tuple[str, InputTemplate]]]]


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


def container_kind(cls: type, name: str, tree: ast.AST) -> ContainerKind | None:
    """``dict``, ``list`` or ``tuple`` for a ``forward`` argument annotated as a container of
    tensors, or indexed with strings in the code; None otherwise."""
    try:
        annotation = typing.get_type_hints(cls.forward).get(name)
    except Exception:  # an annotation that does not evaluate says nothing
        annotation = None
    origin = typing.get_origin(annotation) or annotation
    # A TypedDict is a dict subclass.
    if origin in _DICTS or (isinstance(origin, type) and issubclass(origin, dict)):
        return "dict"
    if origin is tuple:
        return "tuple"
    if origin in _SEQUENCES:
        return "list"
    return "dict" if string_keys(tree, name) else None


def _items(kind: ContainerKind, name: str, tree: ast.AST,
           model: nn.Module) -> list[tuple[str, InputTemplate]] | None:
    """Each item's key (a position for a list or tuple) and the template of the layer that
    takes it; None when an item's layer is not found."""
    used: dict[str, InputTemplate] = {}
    if kind == "dict":
        keys = string_keys(tree, name)
        # Each key's value followed to the layer it reaches (``keyed_batch``).
        used = {use.key: use.template for use in key_uses(tree, model, name, keys)
                if use.template is not None}
        takers = {key: _taker(tree, model, name, ast.Constant(key)) for key in keys}
        if not keys:
            # A ModuleList's items by position where the dict is only iterated (MONAI's
            # FeaturePyramidNetwork: ``list(x.values())``, each taken by ``inner_blocks[i]``).
            table = _indexed_table(tree, model, name) or _first(model, nn.ModuleDict) \
                or _first(model, nn.ModuleList)
            if table is not None:
                takers = dict(table.named_children())
            else:
                # Each value taken by one submodule (``{k: self.conv(v) for k, v in
                # x.items()}``): the code names no key, so a few generic ones.
                taker = _iterated_taker(tree, model, name)
                if taker is None:
                    return None
                takers = dict.fromkeys(GENERIC_KEYS, taker)
    else:
        table = _zipped_table(tree, model, name)
        if table is not None:
            takers = {str(index): layer for index, layer in enumerate(table.children())}
        else:
            positions = _positions(tree, name)
            if positions:
                # ``xs[-1]``, the last of a pyramid's levels: as many items as the code reaches.
                length = max(max(positions.values()) + 1, -min(positions.values()))
                takers = {str(index): next((_taker(tree, model, name, node) for node, position
                                            in positions.items()
                                            if position % length == index), None)
                          for index in range(length)}
            else:
                table = _first(model, nn.ModuleList)
                # A list only passed on (a pyramid's extra level appends to it): one item.
                takers = ({str(index): layer for index, layer in enumerate(table.children())}
                          if table is not None else {"0": None})
    templates = {key: layers[0][2] for key, taker in takers.items()
                 if isinstance(taker, nn.Module) and (layers := known_layers(taker))} | used
    # An item whose taker has no sized layer (a pooling layer) or none is found is shaped as
    # another item, else as the model's first sized layer takes, else as a plain image.
    fallback = next(iter(templates.values()), None) or next(
        (template for _, _, template in known_layers(model)), PLAIN_IMAGE)
    return [(key, templates.get(key, fallback)) for key in takers] or None


def scaled_sizes(sizes: FreeSizes, factor: float) -> FreeSizes:
    """``sizes`` with their spatial sizes (not a sequence's length) times ``factor``."""
    def scaled(size: int) -> int:
        return max(1, round(size * factor))

    return replace(sizes, image=(scaled(sizes.image[0]), scaled(sizes.image[1])),
                   depth=scaled(sizes.depth), signal=scaled(sizes.signal))


def _indexing(tree: ast.AST, name: str) -> list[ast.Subscript | ast.Call]:
    """``name[...]`` and ``name.get(...)`` in the code."""
    found: list[ast.Subscript | ast.Call] = []
    for node in ast.walk(tree):
        got = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr == "get" and _is_name(node.func.value, name) and bool(node.args)
        if got or (isinstance(node, ast.Subscript) and _is_name(node.value, name)):
            found.append(node)
    return found


def _index_of(node: ast.Subscript | ast.Call) -> ast.expr:
    return node.slice if isinstance(node, ast.Subscript) else node.args[0]


def string_keys(tree: ast.AST, name: str) -> list[str]:
    keys = [index.value for index in map(_index_of, _indexing(tree, name))
            if isinstance(index, ast.Constant) and isinstance(index.value, str)]
    return list(dict.fromkeys(keys))


def _positions(tree: ast.AST, name: str) -> dict[ast.expr, int]:
    """The constant positions ``name`` is indexed with (``xs[0]``, ``xs[-1]``), by index node."""
    found: dict[ast.expr, int] = {}
    for index in map(_index_of, _indexing(tree, name)):
        negated = isinstance(index, ast.UnaryOp) and isinstance(index.op, ast.USub)
        constant = index.operand if negated else index
        if isinstance(constant, ast.Constant) and type(constant.value) is int:
            found[index] = -constant.value if negated else constant.value
    return found


def _taker(tree: ast.AST, model: nn.Module, name: str, key: ast.expr) -> nn.Module | None:
    """The submodule ``forward`` passes ``name[key]`` to first (``self.image(x["image"])``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and any(
                ast.dump(_index_of(item)) == ast.dump(key)
                for item in _indexing(node.args[0], name)):
            found = submodule(model, node.func)
            if found is not None:
                return found
    return None


def _iterated_taker(tree: ast.AST, model: nn.Module, name: str) -> nn.Module | None:
    """The submodule ``forward`` passes each value of the dict ``name`` to, where it iterates
    its values (``for key, value in x.items()``, ``for value in x.values()``, a comprehension
    of either)."""
    values: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, (ast.For, ast.comprehension)) \
                or not isinstance(node.iter, ast.Call) \
                or not isinstance(node.iter.func, ast.Attribute) \
                or not _is_name(node.iter.func.value, name):
            continue
        target = node.target
        if node.iter.func.attr == "items" and isinstance(target, ast.Tuple) \
                and len(target.elts) == 2 and isinstance(target.elts[1], ast.Name):
            values.add(target.elts[1].id)
        elif node.iter.func.attr == "values" and isinstance(target, ast.Name):
            values.add(target.id)
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Name) \
                and node.args[0].id in values:
            found = submodule(model, node.func)
            if found is not None:
                return found
    return None


def _indexed_table(tree: ast.AST, model: nn.Module, name: str) -> nn.Module | None:
    """The submodule ``forward`` indexes with the variable it indexes ``name`` with
    (``self.lateral[key](features[key])``)."""
    variables = {ast.dump(_index_of(node)) for node in _indexing(tree, name)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and ast.dump(node.slice) in variables \
                and not _is_name(node.value, name):
            found = submodule(model, node.value)
            if found is not None:
                return found
    return None


def _zipped_table(tree: ast.AST, model: nn.Module, name: str) -> nn.Module | None:
    """The submodule ``name`` is zipped with (``zip(features, self.projections)``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _is_name(node.func, "zip") \
                and any(_is_name(argument, name) for argument in node.args):
            for argument in node.args:
                found = submodule(model, argument)
                if isinstance(found, (nn.ModuleList, nn.ModuleDict, nn.Sequential)):
                    return found
    return None


def _first(model: nn.Module, kind: type[nn.Module]) -> nn.Module | None:
    return next((module for module in model.modules() if isinstance(module, kind)), None)


def _is_name(node: Any, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name
