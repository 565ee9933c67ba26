"""Which items a ``forward`` argument that is a container of tensors holds, read from
``forward``'s code and the model, each with the template of the layer that takes it (the
search over their sizes is ``container``'s):

- the kind comes from the annotation, else from the code (``x["image"]`` in ``forward`` makes
  ``x`` a dict);
- a dict's keys are the strings ``forward`` indexes it with (``x["image"]``, ``x.get("text")``),
  each taken by the submodule it is passed to (``self.image(x["image"])``); without such
  strings, the keys of the ``ModuleDict`` ``forward`` indexes with the same variable
  (``self.lateral[name](features[name])``), else of the model's first ``ModuleDict``, each
  item taken by the submodule of its key, else the positions of its first ``ModuleList``
  (a dict only iterated: ``list(x.values())``);
- a list's or tuple's items are those of the ``ModuleList`` (or ``ModuleDict``) it is zipped
  with (``zip(features, self.projections)``), else the positions ``forward`` indexes it with
  (``self.head(xs[0])``), else the items of the model's first ``ModuleList``.

Each item's template is that of the first layer of its submodule whose input size is known
(``graph_layers.layer_template``).
"""

from __future__ import annotations

import ast
import collections.abc
import typing
from typing import Any

from torch import nn

from fxcore.model.container_spec import ContainerKind
from fxcore.worker.inputs.from_forward.forward_relations import submodule
from fxcore.worker.inputs.from_forward.keyed_batch import key_uses
from fxcore.worker.inputs.from_layers.first_layer import known_layers
from fxcore.worker.inputs.from_layers.graph_layers import BATCH, HEIGHT, WIDTH, InputTemplate

_DICTS = (dict, collections.abc.Mapping, collections.abc.MutableMapping)
_SEQUENCES = (list, collections.abc.Sequence, collections.abc.MutableSequence)
#: The keys of a dict that ``forward`` only iterates, each value taken by the same submodule.
GENERIC_KEYS = ("0", "1")
#: An item's shape where neither its taker nor the model has a sized layer.
PLAIN_IMAGE = InputTemplate("float32", (BATCH, 3, HEIGHT, WIDTH))


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


def container_items(kind: ContainerKind, name: str, tree: ast.AST,
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
