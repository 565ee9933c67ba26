"""What ``forward``'s code does with each key of a dict argument it reads by string keys
(``batch["past_target"]``, ``batch.get("feat_static_cat")``), as a forecasting model reads
its batch: the layer each value reaches, and the shape that layer takes worked back through
what the code does to the value on the way; and which keys the code reads only where they are
present. Read from the source with ``ast`` (nothing runs); ``container`` makes candidates of
it.

A value is followed through the local names it is assigned to (``past = batch["past"]``, then
``self.encoder(past / scale)``) to the first submodule call that takes it (or an expression
of it) as its first argument. On the way back from that layer's input shape
(``graph_layers.layer_template``):

- a ``permute``/``transpose``/``swapaxes`` is undone (``x["values"].permute(0, 2, 1)`` before a
  ``Conv1d`` makes the value ``[batch, length, channels]``);
- a ``cat`` of several values along a dimension splits that dimension evenly among them (the
  target and its observed mask concatenated before one ``Linear``);
- a ``stack`` drops the dimension it made.

A key is optional where a condition tests it: ``if "mask" in batch``, ``if
batch.get("mask") is not None``, or ``if mask is not None`` after ``mask = batch.get("mask")``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from torch import nn

from fxcore.worker.inputs.from_forward.forward_relations import submodule
from fxcore.worker.inputs.from_layers.first_layer import known_layers
from fxcore.worker.inputs.from_layers.graph_layers import InputTemplate

#: Calls that join their first argument's items along a dimension.
_JOINING = frozenset({"cat", "concat", "concatenate"})
#: Methods that swap two dimensions of the tensor they are called on.
_SWAPPING = frozenset({"transpose", "swapaxes", "swapdims"})
#: How many assignments a value is followed through.
_FLOW_DEPTH = 8


@dataclass(frozen=True)
class KeyUse:
    """One key of a dict argument, as ``forward`` uses it."""

    key: str
    #: The shape the layer its value reaches takes, worked back to the value; None where no
    #: submodule takes it.
    template: InputTemplate | None
    #: Read only where a condition found it present.
    optional: bool


def key_uses(tree: ast.AST, model: nn.Module, name: str, keys: list[str]) -> list[KeyUse]:
    """What ``forward`` (``tree``) does with each of ``keys`` of its dict argument ``name``."""
    return [KeyUse(key, _template(tree, model, name, key), _optional(tree, name, key))
            for key in keys]


def _reads(node: ast.AST, name: str, key: str) -> bool:
    """Whether ``node`` reads ``name[key]`` or ``name.get(key...)``."""
    if isinstance(node, ast.Subscript):
        index = node.slice
        return _is_name(node.value, name) and isinstance(index, ast.Constant) \
            and index.value == key
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
        and node.func.attr == "get" and _is_name(node.func.value, name) and bool(node.args) \
        and isinstance(node.args[0], ast.Constant) and node.args[0].value == key


def _holders(tree: ast.AST, name: str, key: str) -> dict[str, list[ast.AST]]:
    """The local names holding an expression of the value (each with the path from the
    expression assigned down to the read), followed through ``_FLOW_DEPTH`` assignments."""
    assignments = sorted((node for node in ast.walk(tree) if isinstance(node, ast.Assign)
                          and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)),
                         key=lambda node: (node.lineno, node.col_offset))
    held: dict[str, list[ast.AST]] = {}
    for _ in range(_FLOW_DEPTH):
        grown = False
        for node in assignments:
            target = node.targets[0].id  # type: ignore[attr-defined]
            if target in held or target == name:
                continue
            path = _path(node.value, name, key, held)
            if path is not None:
                held[target] = path
                grown = True
        if not grown:
            break
    return held


def _path(node: ast.AST, name: str, key: str,
          held: dict[str, list[ast.AST]]) -> list[ast.AST] | None:
    """The nodes from ``node`` down to the read of the value (through a holder's own path),
    or None where ``node`` does not contain it."""
    if _reads(node, name, key):
        return [node]
    if isinstance(node, ast.Name) and node.id in held:
        return held[node.id]
    for child in ast.iter_child_nodes(node):
        below = _path(child, name, key, held)
        if below is not None:
            return [node, *below]
    return None


def _template(tree: ast.AST, model: nn.Module, name: str, key: str) -> InputTemplate | None:
    """The first layer's shape that the value of ``key`` reaches, worked back to the value."""
    held = _holders(tree, name, key)
    return _reached(tree, model, lambda node: _path(node, name, key, held))


def argument_template(tree: ast.AST, model: nn.Module, name: str) -> InputTemplate | None:
    """The first layer's shape that ``forward``'s tensor argument ``name`` reaches, worked
    back to the argument (``x = x.transpose(1, 2)`` before a ``Conv1d``: ``[batch, length,
    channels]``), the name followed through the assignments that set it again."""
    rebinds = sorted(((node.end_lineno or 0, node.end_col_offset or 0), node.value)
                     for node in ast.walk(tree) if isinstance(node, ast.Assign)
                     and len(node.targets) == 1 and _is_name(node.targets[0], name))

    def path(node: ast.AST, depth: int = _FLOW_DEPTH) -> list[ast.AST] | None:
        if isinstance(node, ast.Name) and node.id == name:
            place = (node.lineno, node.col_offset)
            before = [value for end, value in rebinds if end <= place]
            below = path(before[-1], depth - 1) if before and depth else None
            return [node] if below is None else [node, *below]
        for child in ast.iter_child_nodes(node):
            below = path(child, depth)
            if below is not None:
                return [node, *below]
        return None

    return _reached(tree, model, path)


def _reached(tree: ast.AST, model: nn.Module,
             path_of: Callable[[ast.AST], list[ast.AST] | None]) -> InputTemplate | None:
    """The first layer whose first argument holds the value (``path_of`` an expression: the
    nodes down to the value's read), its shape worked back to the value."""
    # In the order they finish: a call nested in another's argument runs first.
    calls = sorted((node for node in ast.walk(tree) if isinstance(node, ast.Call) and node.args),
                   key=lambda node: (node.end_lineno or 0, node.end_col_offset or 0))
    for call in calls:
        taker = submodule(model, call.func)
        if taker is None:
            continue
        path = path_of(call.args[0])
        layers = known_layers(taker) if path is not None else []
        if layers:
            return _worked_back(layers[0][2], path or [])
    return None


def _worked_back(template: InputTemplate, path: list[ast.AST]) -> InputTemplate | None:
    """``template`` undone through the operations on ``path`` (the layer's side first); None
    where one cannot be undone (a ``cat`` whose dimension does not split evenly)."""
    dims = list(template.dims)
    for index, node in enumerate(path):
        if not isinstance(node, ast.Call):
            continue
        method = node.func.attr if isinstance(node.func, ast.Attribute) else None
        numbers = _numbers(node.args)
        if method == "permute" and numbers is not None and len(numbers) == len(dims):
            # ``out[i] = in[order[i]]``: the value's dimension ``order[i]`` is the layer's ``i``.
            value = list(dims)
            for position, source in enumerate(numbers):
                value[source % len(dims)] = dims[position]
            dims = value
        elif method in _SWAPPING and numbers is not None and len(numbers) == 2:
            first, second = (number % len(dims) for number in numbers)
            dims[first], dims[second] = dims[second], dims[first]
        elif _called(node) in _JOINING and index + 1 < len(path) \
                and isinstance(path[index + 1], (ast.List, ast.Tuple)):
            parts = len(path[index + 1].elts)  # type: ignore[attr-defined]
            axis = _axis(node) % len(dims)
            size = dims[axis]
            if isinstance(size, int):
                if size % parts:
                    return None
                dims[axis] = size // parts
        elif _called(node) == "stack" and index + 1 < len(path):
            dims.pop(_axis(node) % len(dims))
    return InputTemplate(template.dtype, tuple(dims),
                         template.sequence_known and dims == list(template.dims))


def _optional(tree: ast.AST, name: str, key: str) -> bool:
    """Whether a condition tests that ``key`` is present (or its value is not None)."""
    held = {target for target, path in _holders(tree, name, key).items() if len(path) == 1}
    for node in ast.walk(tree):
        if not isinstance(node, (ast.If, ast.IfExp, ast.While)):
            continue
        for part in ast.walk(node.test):
            if isinstance(part, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn))
                                                     for op in part.ops) \
                    and isinstance(part.left, ast.Constant) and part.left.value == key \
                    and any(_is_name(_owner(side), name) for side in part.comparators):
                return True
            if _reads(part, name, key) and isinstance(part, ast.Call):
                return True
            if isinstance(part, ast.Name) and part.id in held:
                return True
    return False


def _owner(node: ast.expr) -> ast.expr:
    """``batch`` of ``batch.keys()``, else the node."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
            and node.func.attr == "keys":
        return node.func.value
    return node


def _numbers(nodes: list[ast.expr]) -> list[int] | None:
    """The integers ``nodes`` spell (``-1`` too); None where one is not an integer."""
    found = []
    for node in nodes:
        negated = isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub)
        constant = node.operand if negated else node  # type: ignore[attr-defined]
        if not (isinstance(constant, ast.Constant) and type(constant.value) is int):
            return None
        found.append(-constant.value if negated else constant.value)
    return found


def _axis(node: ast.Call) -> int:
    """The ``dim`` a ``cat``/``stack`` call names (0 where it names none)."""
    given = [keyword.value for keyword in node.keywords if keyword.arg in ("dim", "axis")]
    numbers = _numbers(given or node.args[1:2])
    return numbers[0] if numbers else 0


def _called(node: ast.Call) -> str | None:
    func = node.func
    return func.attr if isinstance(func, ast.Attribute) else \
        func.id if isinstance(func, ast.Name) else None


def _is_name(node: object, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name
