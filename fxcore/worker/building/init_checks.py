"""The rules a constructor checks its arguments against, as Python expressions that must be
true: read from ``__init__``'s ``assert`` statements and its ``if ...: raise`` guards with
``ast``, and from the message of an error the constructor raised where it states a rule
(torch's ``GroupNorm``: "num_channels (3) must be divisible by num_groups (32)").

``fxcore.worker.building.check_solver`` then looks for values that make them true. Runs in
the worker: it reads the imported class's source with ``inspect``; evaluating a rule is left
to the solver, and only rules made of safe parts are kept (``SAFE_CALLS``, names, constants,
arithmetic but powers, comparisons, subscripts and attributes), so no function but those
is called (reading an attribute of a value may still run a property).
"""

from __future__ import annotations

import ast
import inspect
import re
import textwrap
from dataclasses import dataclass
from typing import Any

#: The functions a kept rule may call: they read their arguments and do nothing else.
SAFE_CALLS = frozenset({"len", "isinstance", "int", "float", "tuple", "list", "all", "any",
                        "sum", "min", "max", "abs", "bool", "set", "sorted", "type", "round"})
#: How many top-level assignments before a check are followed (``n = len(dims)``).
MAX_LOCALS = 32

_SAFE_NODES = (ast.expr_context, ast.boolop, ast.operator, ast.unaryop, ast.cmpop,
               ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.Compare, ast.Name, ast.Constant,
               ast.Tuple, ast.List, ast.Set, ast.Subscript, ast.Slice, ast.Attribute,
               ast.Call, ast.keyword, ast.IfExp)


@dataclass
class InitChecks:
    """What must hold for ``__init__`` to accept its arguments: ``rules`` (expressions, each
    true for accepted arguments) and ``assigned`` (the simple local names set before them,
    in order, with their expressions, so a rule on ``n = len(dims)`` can be evaluated)."""

    rules: list[ast.expr]
    assigned: list[tuple[str, ast.expr]]
    #: The globals of ``__init__``'s module, for the names a rule reads (``Sequence``).
    namespace: dict[str, Any]


def init_checks(cls: type) -> InitChecks:
    """The rules ``cls.__init__`` checks, those of safe parts only; empty when its source
    cannot be read."""
    init = getattr(cls, "__init__", None)
    empty = InitChecks([], [], {})
    if not inspect.isfunction(init):
        return empty
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(init)))
    except (OSError, TypeError, SyntaxError, IndentationError):
        return empty
    function = tree.body[0] if tree.body else None
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return empty
    rules: list[ast.expr] = []
    for node in ast.walk(function):
        if isinstance(node, ast.Assert):
            rules.append(node.test)
        elif isinstance(node, ast.If) and any(isinstance(s, ast.Raise) for s in node.body):
            rules.append(ast.UnaryOp(op=ast.Not(), operand=node.test))
    assigned = [(statement.targets[0].id, statement.value) for statement in function.body
                if isinstance(statement, ast.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0], ast.Name) and is_safe(statement.value)]
    return InitChecks([ast.fix_missing_locations(rule) for rule in rules if is_safe(rule)],
                      assigned[:MAX_LOCALS], dict(getattr(init, "__globals__", {})))


def is_safe(expression: ast.expr) -> bool:
    """True when evaluating ``expression`` calls nothing but ``SAFE_CALLS`` (and reads no
    ``self``: an attribute the constructor sets is not known before it runs)."""
    for node in ast.walk(expression):
        if not isinstance(node, _SAFE_NODES):
            return False
        if isinstance(node, ast.Call) and not (isinstance(node.func, ast.Name)
                                               and node.func.id in SAFE_CALLS):
            return False
        if isinstance(node, ast.Name) and node.id == "self":
            return False
        if isinstance(node, ast.Pow):  # ``2 ** 10 ** 10`` would not end
            return False
    return True


#: "num_channels (3) must be divisible by num_groups (32)": a value and its divisor.
_DIVISIBLE_VALUES = re.compile(r"\((\d+)\)\s+(?:must|should|has to)\s+be\s+(?:evenly\s+)?"
                               r"divisible\s+by\s+[\w.]*\s*\(?(\d+)\)?")
#: "embed_dim must be divisible by num_heads": two names.
_DIVISIBLE_NAMES = re.compile(r"(\w+)\s+(?:must|should|has to)\s+be\s+(?:evenly\s+)?divisible"
                              r"\s+by\s+(\w+)")


def message_rules(message: str, values: dict[str, Any]) -> list[ast.expr]:
    """Rules an error's message states about the arguments ``values`` were given: a value
    that must be divisible by a number (each argument that had that value), or an argument
    that must be divisible by another named one."""
    rules: list[str] = []
    for value, divisor in _DIVISIBLE_VALUES.findall(message):
        if int(divisor) > 0:
            rules += [f"{name} % {int(divisor)} == 0" for name, given in values.items()
                      if type(given) is int and given == int(value)]
    for name, other in _DIVISIBLE_NAMES.findall(message):
        if name in values and other in values:
            rules.append(f"{name} % {other} == 0")
    return [ast.parse(rule, mode="eval").body for rule in dict.fromkeys(rules)]
