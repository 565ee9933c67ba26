"""Values for the optional arguments ``forward`` uses only in arithmetic (``x = x + bias * 2``,
``scale * x``, ``t = temperature * 0.5 + 1.0``) without an ``is None`` test: None raises
there on every input, so ``needed_optional`` gives them one where no layer sizes them.

Read from the source with ``ast`` (nothing runs): the first arithmetic expression that takes
the argument (the whole of ``a + b * c`` around it) decides. Where every other operand is a
number (as written, or a size: ``x.shape[-1]``, ``x.size(1)``, ``len(x)``), so is the
argument (``NUMBER``, neutral to ``*`` and ``/``). Else it is a tensor broadcastable with what
it is combined with: the output features of a layer an operand comes from (``h =
self.fc(x)``; ``h + gate * h``: a Linear's ``[1, out_features]``, a convolution's ``[1,
out_channels, 1, 1]``, a layer norm's ``[1, *normalized_shape]``, an embedding's ``[1,
dim]``), else a 0-d tensor, which broadcasts with any. The leading 1 is no batch of its own:
torch.export keeps a dimension of 1 static, as a per-feature tensor is.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from torch import nn

from fxcore.model.tensor_spec import TensorSpec
from fxcore.worker.inputs.from_forward.forward_relations import (
    Assignments,
    assigned_value,
    local_assignments,
    submodule,
)

#: The value of an argument used with numbers only.
NUMBER = 1.0
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)
#: Functions and methods whose value is a Python number: a size, a count.
_SIZES = frozenset({"len", "int", "float"})
_SIZE_METHODS = frozenset({"size", "dim", "numel", "ndimension"})
#: How many names and layers deep an operand is followed to the layer it comes from.
_MAX_DEPTH = 6


@dataclass(frozen=True)
class ArithmeticUse:
    """What an optional argument used in arithmetic gets: a tensor of ``spec``, or the
    number ``NUMBER`` where ``spec`` is None; ``use``: the expression, as written."""

    spec: TensorSpec | None
    use: str


def arithmetic_use(tree: ast.AST, model: nn.Module, name: str) -> ArithmeticUse | None:
    """How the first arithmetic expression of ``tree`` (a forward of ``model``) that takes
    ``name`` sizes it; None where none takes it."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    assigned = local_assignments(tree)
    reads = sorted((node for node in ast.walk(tree) if isinstance(node, ast.Name)
                    and node.id == name and isinstance(node.ctx, ast.Load)),
                   key=lambda node: (node.lineno, node.col_offset))
    for read in reads:
        top = _expression(read, parents)
        others = [leaf for leaf in _operands(top) if leaf is not read]
        if top is read or not others:
            continue
        if all(_is_number(leaf) for leaf in others):
            return ArithmeticUse(None, ast.unparse(top))
        shapes = (_features(leaf, model, assigned, 0) for leaf in others)
        shape = next((found for found in shapes if found is not None), ())
        return ArithmeticUse(TensorSpec("float32", shape), ast.unparse(top))
    return None


def _expression(node: ast.expr, parents: dict[ast.AST, ast.AST]) -> ast.AST:
    """The whole arithmetic around ``node`` (``x + bias * 2`` around ``bias``); for
    ``x += bias``, the statement; ``node`` itself where it is in none."""
    while True:
        parent = parents.get(node)
        if (isinstance(parent, ast.BinOp) and isinstance(parent.op, _ARITHMETIC)) \
                or (isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.USub)):
            node = parent
        elif isinstance(parent, ast.AugAssign) and isinstance(parent.op, _ARITHMETIC) \
                and parent.value is node:
            return parent
        else:
            return node


def _operands(node: ast.AST) -> list[ast.expr]:
    """The leaves of an arithmetic expression (``x``, ``bias``, ``2`` of ``x + bias * 2``)."""
    if isinstance(node, ast.BinOp):
        return [*_operands(node.left), *_operands(node.right)]
    if isinstance(node, ast.UnaryOp):
        return _operands(node.operand)
    if isinstance(node, ast.AugAssign):
        target = ast.Name(id=node.target.id, ctx=ast.Load()) \
            if isinstance(node.target, ast.Name) else node.target
        return [target, *_operands(node.value)]
    return [node] if isinstance(node, ast.expr) else []


def _is_number(node: ast.expr) -> bool:
    """A number as written (``0.5``), or a size read from a tensor (``x.shape[-1]``,
    ``x.size(1)``, ``len(x)``, ``x.dim()``)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
    if isinstance(node, ast.Subscript):
        return isinstance(node.value, ast.Attribute) and node.value.attr == "shape"
    if isinstance(node, ast.Call):
        function = node.func
        return (isinstance(function, ast.Name) and function.id in _SIZES) \
            or (isinstance(function, ast.Attribute) and function.attr in _SIZE_METHODS)
    return False


def _features(node: ast.expr, model: nn.Module, assigned: Assignments, depth: int
              ) -> tuple[int, ...] | None:
    """The broadcastable shape of the output features of the layer ``node`` comes from: a
    local name's value, a submodule's call, an operand of arithmetic; None where no layer
    tells one."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(node, ast.Name):
        value = assigned_value(node, assigned)
        return None if value is node else _features(value, model, assigned, depth + 1)
    if isinstance(node, (ast.BinOp, ast.UnaryOp)):
        found = (_features(leaf, model, assigned, depth + 1) for leaf in _operands(node))
        return next((shape for shape in found if shape is not None), None)
    if isinstance(node, ast.Call):
        called = submodule(model, node.func)
        return _output_features(called) if called is not None else None
    return None


def _output_features(layer: nn.Module) -> tuple[int, ...] | None:
    """The shape a tensor broadcast over ``layer``'s output takes from its features."""
    if isinstance(layer, nn.Linear):
        return (1, layer.out_features)
    if isinstance(layer, nn.modules.conv._ConvNd):
        return (1, layer.out_channels, *(1,) * len(layer.kernel_size))
    if isinstance(layer, nn.LayerNorm):
        return (1, *layer.normalized_shape)
    if isinstance(layer, nn.Embedding):
        return (1, layer.embedding_dim)
    return None
