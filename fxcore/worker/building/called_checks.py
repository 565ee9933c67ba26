"""The functions a constructor hands its arguments to, whose checks are its own: the base
class's ``__init__`` (``super().__init__(...)``, ``Base.__init__(self, ...)``) along the MRO,
and a module-level helper called by name (``_validate_args(in_channels, groups)``), each with
the argument expressions its parameters receive at the call.

``fxcore.worker.building.init_checks`` reads their rules in the caller's terms. Nothing is
called here: names are looked up in the function's globals and classes' ``__dict__``s
(``inspect.getattr_static``), so no property or lazy module ``__getattr__`` runs.
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass
from types import FunctionType
from typing import Any

#: The name a call's receiver (``self``) is bound to, so rules reading it are not kept.
SELF = "self"


@dataclass
class CalledFunction:
    """A function called with the caller's arguments: ``bound`` maps each of its parameters
    the call gives to the expression given (in the caller's names); ``owner`` is the class
    whose ``__dict__`` holds it (None for a helper), for its own ``super()`` calls;
    ``complete``: False when a ``**mapping`` may give the parameters not in ``bound``, so
    their defaults are not known to apply."""

    function: FunctionType
    bound: dict[str, ast.expr]
    owner: type | None
    complete: bool


def own_init(cls: type) -> tuple[FunctionType, type] | None:
    """The ``__init__`` an instance of ``cls`` runs first and the class defining it, when it
    is a Python function."""
    return _init_of(cls.__mro__)


def called_functions(function: ast.FunctionDef, namespace: dict[str, Any], cls: type,
                     owner: type | None) -> list[CalledFunction]:
    """The base ``__init__``s and module-level helpers ``function`` (defined on ``owner``,
    read for an instance of ``cls``) calls without ``*args`` (base ``__init__``s first)."""
    called = []
    for node in _calls(function):
        if any(isinstance(a, ast.Starred) for a in node.args):
            continue  # which parameter gets what is not known
        target = _target(node.func, namespace, cls, owner)
        if target is None:
            continue
        function_called, called_owner, receiver = target
        given = ([ast.Name(id=SELF, ctx=ast.Load())] if receiver else []) + list(node.args)
        try:
            signature = inspect.signature(function_called)
            bound = signature.bind_partial(
                *given, **{k.arg: k.value for k in node.keywords if k.arg})
        except (TypeError, ValueError):
            continue  # the call does not fit the signature as read
        # A ``*args`` or ``**kwargs`` parameter binds a tuple or dict of expressions, which
        # no rule reads by that name.
        named = {name: given for name, given in bound.arguments.items()
                 if signature.parameters[name].kind not in (inspect.Parameter.VAR_POSITIONAL,
                                                           inspect.Parameter.VAR_KEYWORD)}
        called.append(CalledFunction(function_called, named, called_owner,
                                     all(k.arg is not None for k in node.keywords)))
    return sorted(called, key=lambda call: call.owner is None)


def _calls(function: ast.FunctionDef) -> list[ast.Call]:
    """The calls in ``function``'s own body, not in functions or classes it defines."""
    found: list[ast.Call] = []
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop(0)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, ast.Call):
            found.append(node)
        pending.extend(ast.iter_child_nodes(node))
    return found


def _target(func: ast.expr, namespace: dict[str, Any], cls: type, owner: type | None
            ) -> tuple[FunctionType, type | None, bool] | None:
    """What a call's ``func`` names: a base ``__init__`` (its class, called with the
    receiver) or a plain function (no class, no receiver); None for anything else."""
    if isinstance(func, ast.Attribute) and func.attr == "__init__":
        if isinstance(func.value, ast.Call) and isinstance(func.value.func, ast.Name) \
                and func.value.func.id == "super":
            if owner is None or owner not in cls.__mro__:
                return None
            after = cls.__mro__[cls.__mro__.index(owner) + 1:]
            found = _init_of(after)
            return (*found, True) if found else None  # the receiver is implicit
        named = _resolved(func.value, namespace)
        if isinstance(named, type):
            found = _init_of(named.__mro__)
            # ``Base.__init__(self, ...)``: the receiver is the first argument
            return (found[0], found[1], False) if found else None
        return None
    if isinstance(func, ast.Name):
        named = namespace.get(func.id)
        if isinstance(named, FunctionType) and not inspect.isclass(named):
            return named, None, False
    return None


def _init_of(classes: tuple[type, ...]) -> tuple[FunctionType, type] | None:
    """The first ``__init__`` defined along ``classes`` and its class, when it is Python."""
    for klass in classes:
        init = vars(klass).get("__init__")
        if init is not None:
            return (init, klass) if isinstance(init, FunctionType) else None
    return None


def _resolved(expression: ast.expr, namespace: dict[str, Any]) -> Any:
    """The object a dotted name (``nn.Conv2d``) names, read without running code."""
    if isinstance(expression, ast.Name):
        return namespace.get(expression.id)
    if isinstance(expression, ast.Attribute):
        base = _resolved(expression.value, namespace)
        if base is None:
            return None
        try:
            return inspect.getattr_static(base, expression.attr)
        except AttributeError:
            return None
    return None
