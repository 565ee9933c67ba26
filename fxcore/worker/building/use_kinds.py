"""The kind of value a constructor parameter takes, read from how ``__init__`` uses it, where
its name and annotation say nothing (``fxcore.worker.building.arguments``):

- a number: the parameter is an operand of arithmetic (``n * 2``, ``dim // heads``, ``n - 1``,
  but not ``prefix + "_x"``), ordered against a number (``n > 0``), a slice bound
  (``x[:n]``), the count of ``range(n)``, a size of a tensor factory (``torch.zeros(n)``) or
  a size of a torch layer (``nn.Linear(n, ...)``, ``nn.GroupNorm(groups, n)``): such a
  parameter is never given a string the module names elsewhere;
- the types ``isinstance`` checks it against (``isinstance(size, int)``, ``isinstance(dims,
  (list, tuple))``), in the order the code tests them.

Only ``__init__``'s own source is read (``function_trees``); nothing is called. ``of_use``
also keeps the values that fit what ``forward`` does with the parameter
(``fxcore.worker.building.forward_uses``).
"""

from __future__ import annotations

import ast
import builtins
import functools
import inspect
import re
import types
from dataclasses import dataclass, field
from typing import Any

import torch

from fxcore.worker.building.called_checks import own_init
from fxcore.worker.building.forward_uses import USED_NUMBER, of_forward_use
from fxcore.worker.source.function_trees import function_tree

#: Tensor factories whose positional arguments are sizes.
_SIZED_FACTORIES = frozenset({"zeros", "ones", "empty", "randn", "rand", "full", "arange",
                              "randint", "eye", "linspace"})
#: The parameters of torch's layers that take a size or a count.
_LAYER_SIZES = re.compile(
    r"(in|out)_(channels|features)|num_(features|channels|groups|heads|embeddings|layers)"
    r"|embed(ding)?_dim|normalized_shape|kernel_size|stride|padding|dilation|groups"
    r"|hidden_size|input_size|d_model|nhead|dim_feedforward|(output_)?size|proj_size"
    r"|in\d_features")
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod)
_ORDERED = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)


@dataclass
class ParameterUse:
    """How ``__init__`` uses one parameter: as a number, and the types it checks."""

    number: bool = False
    checked_types: list[type] = field(default_factory=list)


@functools.lru_cache(maxsize=64)
def parameter_uses(cls: type) -> dict[str, ParameterUse]:
    """Parameter -> its use in the ``__init__`` instances of ``cls`` run first; parameters
    that are neither used as a number nor checked with ``isinstance`` are left out."""
    found = own_init(cls)
    tree = function_tree(found[0]) if found is not None else None
    if tree is None or not tree.body or not isinstance(tree.body[0], ast.FunctionDef):
        return {}
    function = tree.body[0]
    arguments = function.args
    names = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}
    namespace = getattr(found[0], "__globals__", {}) if found is not None else {}
    uses: dict[str, ParameterUse] = {}
    for node in ast.walk(function):
        for name in _numbers(node, names, namespace):
            uses.setdefault(name, ParameterUse()).number = True
        checked = _isinstance_check(node, names, namespace)
        if checked is not None:
            use = uses.setdefault(checked[0], ParameterUse())
            use.checked_types += [t for t in checked[1] if t not in use.checked_types]
    return uses


#: A value of each type an ``isinstance`` check may ask for, where the guesses have none.
_CHECKED_TYPE_VALUES: dict[type, Any] = {int: USED_NUMBER, float: 1.0, bool: False,
                                         tuple: (16, 32), list: [16, 32], dict: {}}


def of_use(cls: type, name: str, values: list[Any]) -> list[Any]:
    """``values`` for the parameter ``name`` of ``cls`` kept where they are of the kind
    ``__init__``'s use says (``of_used_kind``), then where they fit what ``forward`` does with
    the attribute ``__init__`` keeps it as (``forward_uses.of_forward_use``: possibly none)."""
    use = parameter_uses(cls).get(name)
    if use is not None:
        values = of_used_kind(values, use)
    return of_forward_use(cls, name, values)


def of_used_kind(values: list[Any], use: ParameterUse) -> list[Any]:
    """``values`` kept where they are of the kind ``__init__``'s use says, best first: a
    number where it is used as one (never a string the module names elsewhere), one of the
    types its ``isinstance`` checks name (in the order the code tests them)."""
    if use.number:
        values = [v for v in values if type(v) in (int, float)] or [USED_NUMBER]
    checked = [t for t in use.checked_types if t is not type(None)]
    if checked and not any(isinstance(v, tuple(checked)) for v in values):
        # The checked type first, the others after: a branch may take them too.
        values = [*(_CHECKED_TYPE_VALUES[t] for t in checked if t in _CHECKED_TYPE_VALUES),
                  *values]
    elif checked:
        values = sorted(values, key=lambda v: not isinstance(v, tuple(checked)))
    return values


def _named(node: ast.AST, names: set[str]) -> str | None:
    return node.id if isinstance(node, ast.Name) and node.id in names else None


def _is_text(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant)
                                               and isinstance(node.value, str))


def _numbers(node: ast.AST, names: set[str], namespace: dict[str, Any]) -> list[str]:
    """The parameters ``node`` uses as a number."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, _ARITHMETIC):
        if isinstance(node.op, (ast.Add, ast.Mod)) and (_is_text(node.left)
                                                        or _is_text(node.right)):
            return []  # ``prefix + "_x"``, ``"%s" % name``: text
        return [n for n in (_named(node.left, names), _named(node.right, names)) if n]
    if isinstance(node, ast.Compare) and all(isinstance(op, _ORDERED) for op in node.ops):
        sides = [node.left, *node.comparators]
        if any(isinstance(s, ast.Constant) and type(s.value) in (int, float) for s in sides):
            return [n for n in (_named(s, names) for s in sides) if n]
    if isinstance(node, ast.Slice):
        return [n for n in (_named(part, names) for part in (node.lower, node.upper, node.step)
                            if part is not None) if n]
    if isinstance(node, ast.Call):
        return _sized_arguments(node, names, namespace)
    return []


def _sized_arguments(call: ast.Call, names: set[str], namespace: dict[str, Any]) -> list[str]:
    """The parameters a call takes as sizes: ``range``'s, a tensor factory's positional
    arguments, the size parameters of a torch layer."""
    called = _resolved(call.func, namespace)
    if called is builtins.range or ((getattr(called, "__module__", "") or "").startswith(
            "torch") and getattr(called, "__name__", "") in _SIZED_FACTORIES):
        return [n for n in (_named(a, names) for a in call.args) if n]
    if not (isinstance(called, type) and issubclass(called, torch.nn.Module)
            and called.__module__.startswith("torch.nn")):
        return []
    try:
        parameters = [p for p in inspect.signature(called).parameters if p != "self"]
    except (TypeError, ValueError):
        return []
    given = [(parameters[i] if i < len(parameters) else "", a) for i, a in enumerate(call.args)]
    given += [(k.arg or "", k.value) for k in call.keywords]
    return [n for parameter, value in given if _LAYER_SIZES.fullmatch(parameter)
            and (n := _named(value, names))]


def _isinstance_check(node: ast.AST, names: set[str], namespace: dict[str, Any]
                      ) -> tuple[str, list[type]] | None:
    """``isinstance(name, T)`` or ``isinstance(name, (T, U))``: the parameter and the types."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "isinstance" and len(node.args) == 2):
        return None
    name = _named(node.args[0], names)
    if name is None:
        return None
    parts = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
    types = [t for t in (_resolved(part, namespace) for part in parts) if isinstance(t, type)]
    return (name, types) if types else None


def _resolved(node: ast.AST, namespace: dict[str, Any]) -> Any:
    """What a name or a dotted name (``torch.zeros``, ``nn.Linear``) names, read from the
    function's globals and the modules' attributes; builtins by name."""
    if isinstance(node, ast.Name):
        if node.id in namespace:
            return namespace[node.id]
        return getattr(builtins, node.id, None)
    if isinstance(node, ast.Attribute):
        owner = _resolved(node.value, namespace)
        if not isinstance(owner, (type, types.ModuleType)):
            return None
        try:
            return getattr(owner, node.attr, None)
        except Exception:  # a lazy module's __getattr__ may raise anything: unknown
            return None
    return None
