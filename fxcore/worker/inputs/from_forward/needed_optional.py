"""Tensors for the optional arguments ``forward`` needs: an argument whose default is None, used
without an ``is None`` test (``temb=None`` passed through ``silu`` to a linear layer, an
``encoder_hidden_states=None`` passed on to a block's cross-attention), raises on every input
that leaves it out. The fixed-shape searches (``first_layer``, ``related``, ``layouts``,
``documented``, ``waveform``) decide the required arguments only, so ``deciding`` first gives
them these beside the required ones, and takes the first set the model runs on eagerly, as
every inferred input is.

Each is sized from its first use that tells a size, read from the source with ``ast`` (nothing
runs): the first layer whose input size is known (``graph_layers.layer_template``) that takes
it as its first argument, through shape-keeping steps on the way (an activation module or
function, ``.float()``, ``x if c is None else c``), following it into a submodule that takes
it (a block's ``attn2(h, encoder_hidden_states)``: its ``context`` argument, then that
forward's own uses), at most ``MAX_DEPTH`` levels deep. A linear layer's or a layer norm's
input is a sequence (``[2, 8, in]``) unless the argument is named as an embedding
(``symbolic_sizes.EMBEDDING_WORDS``) or the layer's output gets new axes at once
(``self.proj(temb)[:, :, None, None]``, ``.unsqueeze(1)``): then a vector per item
(``[2, in]``). Where no layer sizes it, its first use in arithmetic does
(``arithmetic_uses``): ``x + bias * 2`` a tensor broadcastable with ``x``, ``temperature *
0.5`` a number (``needed_numbers``). An argument ``forward`` tests (``if mask is not None``,
``if mask:``, ``mask or x``) may be left out, and is; so is one nothing sizes.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator

from torch import nn

from fxcore.model.tensor_spec import TensorSpec
from fxcore.worker.inputs.from_forward.arithmetic_uses import NUMBER, arithmetic_use
from fxcore.worker.inputs.from_forward.forward_relations import (
    Assignments,
    assigned_value,
    forward_tree,
    local_assignments,
    submodule,
)
from fxcore.worker.inputs.from_forward.symbolic_sizes import EMBEDDING_WORDS, optional_arguments
from fxcore.worker.inputs.from_layers.graph_layers import FreeSizes, layer_template

#: How many submodules deep an argument passed on is followed.
MAX_DEPTH = 3
#: Functions and methods that keep their first argument's (or owner's) shape.
_KEEPING = frozenset({"silu", "gelu", "relu", "sigmoid", "tanh", "mish", "elu", "leaky_relu",
                      "softplus", "dropout", "hardswish", "float", "half", "to", "type_as",
                      "contiguous", "clone", "detach"})
#: Modules that keep their input's shape.
_KEEPING_MODULES = (nn.ReLU, nn.GELU, nn.SiLU, nn.Sigmoid, nn.Tanh, nn.LeakyReLU, nn.ELU,
                    nn.Mish, nn.Hardswish, nn.Softplus, nn.Identity, nn.Dropout)
#: Methods whose call on a layer's output adds an axis to it.
_ADDING_AXES = frozenset({"unsqueeze", "view", "reshape"})


def needed_optional(cls: type, model: nn.Module, concrete_args: dict[str, object]
                    ) -> dict[str, tuple[TensorSpec, str]]:
    """The optional arguments of ``cls.forward`` that it uses without testing them, each with
    a spec sized from its first use and that use in words (``time_emb_proj (Linear)``)."""
    tree = forward_tree(cls)
    if tree is None:
        return {}
    needed: dict[str, tuple[TensorSpec, str]] = {}
    for name in _untested(tree, cls, concrete_args):
        sized = _sized(tree, model, name, "", 0)
        if sized is None:
            # No layer sizes it: arithmetic may (``x + bias * 2``), unless with numbers only.
            used = arithmetic_use(tree, model, name)
            sized = (used.spec, f"`{used.use}`") \
                if used is not None and used.spec is not None else None
        if sized is not None:
            needed[name] = sized
    return needed


def needed_numbers(cls: type, model: nn.Module, concrete_args: dict[str, object]
                   ) -> dict[str, float]:
    """The optional arguments of ``cls.forward`` that it uses untested in arithmetic with
    numbers only (``temperature * 0.5 + 1.0``), each with the number it gets
    (``arithmetic_uses``), where no layer sizes it as a tensor."""
    tree = forward_tree(cls)
    if tree is None:
        return {}
    return {name: NUMBER for name in _untested(tree, cls, concrete_args)
            if _sized(tree, model, name, "", 0) is None
            and (used := arithmetic_use(tree, model, name)) is not None and used.spec is None}


def _untested(tree: ast.AST, cls: type, concrete_args: dict[str, object]) -> list[str]:
    """The optional arguments ``forward`` reads and never tests."""
    return [name for name in optional_arguments(cls, concrete_args)
            if _read(tree, name) and not _tested(tree, name)]


def _read(tree: ast.AST, name: str) -> bool:
    return any(isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)
               for node in ast.walk(tree))


def _tested(tree: ast.AST, name: str) -> bool:
    """``forward`` tests ``name`` (``is None``, ``== None``, as a condition, in ``and``/``or``):
    it runs without it."""
    def named(node: ast.AST | None) -> bool:
        while isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            node = node.operand
        return isinstance(node, ast.Name) and node.id == name

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(
                node.ops[0], (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)):
            sides = [node.left, node.comparators[0]]
            if any(named(side) for side in sides) and any(
                    isinstance(side, ast.Constant) and side.value is None for side in sides):
                return True
        tests = [node.test] if isinstance(node, (ast.If, ast.IfExp, ast.While, ast.Assert)) \
            else node.values if isinstance(node, ast.BoolOp) else []
        if any(named(test) for test in tests):
            return True
    return False


def _sized(tree: ast.AST, model: nn.Module, name: str, prefix: str, depth: int
           ) -> tuple[TensorSpec, str] | None:
    """The spec the first sizing use of ``name`` in ``tree`` (a forward of ``model``) tells."""
    assigned = local_assignments(tree)
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for call in _calls_in_order(tree):
        called = submodule(model, call.func)
        if called is None:
            continue
        for place, argument in _arguments(call):
            if not _carries(argument, name, model, assigned):
                continue
            path = f"{prefix}{_dotted(call.func)}"
            found = _sized_by(called, place, path, depth,
                              _vector(name, parents.get(call), parents))
            if found is not None:
                return found
    return None


def _sized_by(called: nn.Module, place: int | str, path: str, depth: int, vector: bool
              ) -> tuple[TensorSpec, str] | None:
    """The spec ``called`` tells for what it takes at ``place`` (a position or keyword)."""
    template = layer_template(called)
    if template is not None:
        if place != 0:
            return None
        spec = template.spec(FreeSizes())
        if vector and isinstance(called, (nn.Linear, nn.LayerNorm)):
            spec = TensorSpec(spec.dtype, (spec.shape[0], spec.shape[-1]))
        return spec, f"`{path}` ({type(called).__name__})"
    if isinstance(called, _KEEPING_MODULES) or depth >= MAX_DEPTH:
        return None
    if isinstance(called, nn.Sequential):
        first = next((layer for layer in called if not isinstance(layer, _KEEPING_MODULES)),
                     None)
        index = next((key for key, layer in called._modules.items() if layer is first), "0")
        return _sized_by(first, place, f"{path}.{index}", depth + 1, vector) \
            if first is not None else None
    parameter = _parameter(called, place)
    tree = forward_tree(type(called))
    if parameter is None or tree is None:
        return None
    return _sized(tree, called, parameter, f"{path}.", depth + 1)


def _parameter(module: nn.Module, place: int | str) -> str | None:
    try:
        parameters = [p for p in inspect.signature(module.forward).parameters.values()
                      if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    except (TypeError, ValueError):
        return None
    if isinstance(place, str):
        return place if any(p.name == place for p in parameters) else None
    positional = [p for p in parameters if p.kind != p.KEYWORD_ONLY]
    return positional[place].name if place < len(positional) else None


def _arguments(call: ast.Call) -> Iterator[tuple[int | str, ast.expr]]:
    yield from enumerate(call.args)
    for keyword in call.keywords:
        if keyword.arg is not None:
            yield keyword.arg, keyword.value


def _calls_in_order(tree: ast.AST) -> list[ast.Call]:
    """Calls in the order they run: an inner call before the one that takes its value."""
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    return sorted(calls, key=lambda c: (c.end_lineno or 0, c.end_col_offset or 0))


def _carries(node: ast.expr, name: str, model: nn.Module, assigned: Assignments,
             depth: int = 0) -> bool:
    """``node`` holds the argument ``name`` with its shape kept: the argument, a local name
    last assigned such a value, a shape-keeping call of one, either side of a conditional."""
    if depth > 8:
        return False
    if isinstance(node, ast.Name):
        value = assigned_value(node, assigned)
        if value is not node:
            return _carries(value, name, model, assigned, depth + 1)
        return node.id == name
    if isinstance(node, ast.IfExp):
        return any(_carries(side, name, model, assigned, depth + 1)
                   for side in (node.body, node.orelse))
    if not isinstance(node, ast.Call):
        return False
    called = submodule(model, node.func)
    if called is not None:
        return isinstance(called, _KEEPING_MODULES) and bool(node.args) \
            and _carries(node.args[0], name, model, assigned, depth + 1)
    if not isinstance(node.func, (ast.Attribute, ast.Name)):
        return False
    function = node.func.attr if isinstance(node.func, ast.Attribute) else node.func.id
    if function not in _KEEPING:
        return False
    # ``F.silu(t)``, ``torch.sigmoid(t)``: the first argument; ``t.float()``: the owner.
    if node.args and _carries(node.args[0], name, model, assigned, depth + 1):
        return True
    return isinstance(node.func, ast.Attribute) \
        and _carries(node.func.value, name, model, assigned, depth + 1)


def _vector(name: str, parent: ast.AST | None, parents: dict[ast.AST, ast.AST]) -> bool:
    """The argument is a vector per item: named as an embedding, or the layer's output gets
    new axes at once (``[:, :, None, None]``, ``.unsqueeze(1)``)."""
    if set(name.lower().split("_")) & EMBEDDING_WORDS:
        return True
    if isinstance(parent, ast.Subscript):
        index = parent.slice
        items = index.elts if isinstance(index, ast.Tuple) else [index]
        return any(isinstance(item, ast.Constant) and item.value is None for item in items)
    return isinstance(parent, ast.Attribute) and parent.attr in _ADDING_AXES \
        and isinstance(parents.get(parent), ast.Call)


def _dotted(node: ast.expr) -> str:
    """``self.a.b`` as ``a.b``, ``self.a[0]`` as ``a.0``."""
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return f"{_dotted(node.value)}.{node.slice.value}"
    return ""
