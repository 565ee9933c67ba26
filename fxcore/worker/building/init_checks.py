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
import builtins
import copy
import inspect
import re
from dataclasses import dataclass
from types import FunctionType
from typing import Any

import torch

from fxcore.worker.building.called_checks import called_functions, own_init
from fxcore.worker.source.function_trees import function_tree
from fxcore.worker.source.user_objects import user_attribute

#: The functions a kept rule may call: they read their arguments and do nothing else.
SAFE_CALLS = frozenset({"len", "isinstance", "int", "float", "tuple", "list", "all", "any",
                        "sum", "min", "max", "abs", "bool", "set", "sorted", "type", "round"})
#: How many top-level assignments before a check are followed (``n = len(dims)``).
MAX_LOCALS = 32
#: How many functions' rules are read at most: the constructor's, its bases' ``__init__``s
#: and the helpers they call, depth first.
MAX_FUNCTIONS = 12

_DIVISIONS = (ast.Div, ast.FloorDiv, ast.Mod)
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
    """The rules ``cls.__init__`` checks, those of safe parts only, with those of the base
    ``__init__``s and helpers it hands its arguments to (``called_checks``), read in its
    argument names; empty when its source cannot be read."""
    found = own_init(cls)
    if found is None:
        return InitChecks([], [], {})
    init, owner = found
    checks = InitChecks([], [], dict(getattr(init, "__globals__", {})))
    _read(checks, cls, init, owner, None, [MAX_FUNCTIONS])
    checks.assigned = checks.assigned[:MAX_LOCALS]
    return checks


def _read(checks: InitChecks, cls: type, function: FunctionType, owner: type | None,
          bound: dict[str, ast.expr] | None, budget: list[int], complete: bool = True
          ) -> None:
    """Add ``function``'s rules and simple locals to ``checks``, then those of the functions
    it calls with its arguments. ``bound``: None for the constructor itself (its names are
    the arguments'), else the caller's expression for each parameter the call gives;
    ``complete``: whether the parameters it does not give take their defaults."""
    node = _parsed(function)
    if node is None or budget[0] <= 0:
        return
    budget[0] -= 1
    names = {} if bound is None else _foreign_names(checks, function, node, bound,
                                                   f"_fx{budget[0]}_", complete)

    def renamed(tree: ast.expr) -> ast.expr:
        return ast.fix_missing_locations(_Renamer(names).visit(copy.deepcopy(tree)))

    for statement in node.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 \
                and isinstance(statement.targets[0], ast.Name):
            target = renamed(statement.targets[0])
            value = renamed(statement.value)
            if isinstance(target, ast.Name) and is_safe(value):
                checks.assigned.append((target.id, value))
    layer_rules = _layer_rules(node, getattr(function, "__globals__", {}))
    for rule in [*_guarded_rules(node.body, []), *_index_rules(node), *layer_rules,
                 *_divisor_rules(node)]:
        rule = renamed(rule)
        if is_safe(rule):
            checks.rules.append(rule)
    for call in called_functions(node, getattr(function, "__globals__", {}), cls, owner):
        _read(checks, cls, call.function, call.owner,
              {name: renamed(given) for name, given in call.bound.items()}, budget,
              call.complete)


def _parsed(function: FunctionType) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    tree = function_tree(function)
    node = tree.body[0] if tree is not None and tree.body else None
    return node if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def _foreign_names(checks: InitChecks, function: FunctionType, node: ast.AST,
                   bound: dict[str, ast.expr], prefix: str, complete: bool
                   ) -> dict[str, ast.expr]:
    """How a called function's names read in the constructor's: a parameter the call
    gives as the caller's expression, one it leaves as its default (put in the namespace);
    any other name but a builtin made the function's own (a global put in the namespace
    under that name), so it cannot be taken for one of the constructor's arguments. A name
    bound to nothing (a parameter not given, with no default) makes its rules unknown."""
    names: dict[str, ast.expr] = {}
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        parameters = []
    for parameter in parameters:
        if parameter.name in bound:
            names[parameter.name] = bound[parameter.name]
            continue
        names[parameter.name] = ast.Name(id=prefix + parameter.name, ctx=ast.Load())
        if complete and parameter.default is not inspect.Parameter.empty:
            checks.namespace[prefix + parameter.name] = parameter.default
    own_globals = getattr(function, "__globals__", {})
    for name in {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} - set(names):
        if name in own_globals:
            checks.namespace[prefix + name] = own_globals[name]
        elif hasattr(builtins, name):
            continue
        names[name] = ast.Name(id=prefix + name, ctx=ast.Load())
    return names


class _Renamer(ast.NodeTransformer):
    """Replaces each name of ``names`` by its expression."""

    def __init__(self, names: dict[str, ast.expr]) -> None:
        self.names = names

    def visit_Name(self, node: ast.Name) -> ast.expr:
        replacement = self.names.get(node.id)
        if replacement is None:
            return node
        if isinstance(replacement, ast.Name):
            return ast.Name(id=replacement.id, ctx=node.ctx)
        return copy.deepcopy(replacement)


def _guarded_rules(body: list[ast.stmt], guards: list[ast.expr]) -> list[ast.expr]:
    """The rules of the ``assert``s and ``if ...: raise`` guards in ``body``; one nested in
    an ``if`` holds only where that ``if``'s test does (``not test or rule``)."""
    rules: list[ast.expr] = []
    for statement in body:
        if isinstance(statement, ast.Assert):
            rules.append(_implied(guards, statement.test))
        elif isinstance(statement, ast.If):
            if any(isinstance(s, ast.Raise) for s in statement.body):
                rules.append(_implied(guards, ast.UnaryOp(op=ast.Not(), operand=statement.test)))
            rules += _guarded_rules(statement.body, [*guards, statement.test])
            rules += _guarded_rules(statement.orelse, [*guards, ast.UnaryOp(
                op=ast.Not(), operand=statement.test)])
        elif isinstance(statement, (ast.For, ast.While, ast.With, ast.Try)):
            for field in ("body", "orelse", "finalbody"):
                rules += _guarded_rules(getattr(statement, field, []), guards)
    return rules


def _implied(guards: list[ast.expr], rule: ast.expr) -> ast.expr:
    if not guards:
        return rule
    held = guards[0] if len(guards) == 1 else ast.BoolOp(op=ast.And(), values=list(guards))
    return ast.BoolOp(op=ast.Or(), values=[ast.UnaryOp(op=ast.Not(), operand=held), rule])


def _index_rules(function: ast.AST) -> list[ast.expr]:
    """Lengths a sequence argument must have to be indexed as ``function`` indexes it:
    ``a[d] for d in b`` needs ``len(a) > max(b)``, ``a[i] for i in range(len(b))``
    ``len(a) >= len(b)`` (in a comprehension or a ``for`` loop)."""
    rules: list[str] = []
    for node in ast.walk(function):
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            loops = [(g.target, g.iter, node) for g in node.generators]
        elif isinstance(node, ast.For):
            loops = [(node.target, node.iter, node)]
        else:
            continue
        for target, iterated, scope in loops:
            if not isinstance(target, ast.Name):
                continue
            bound = _index_bound(iterated)
            if bound is None:
                continue
            for indexed in ast.walk(scope):
                if isinstance(indexed, ast.Subscript) and isinstance(indexed.value, ast.Name) \
                        and isinstance(indexed.slice, ast.Name) \
                        and indexed.slice.id == target.id:
                    rules.append(f"len({indexed.value.id}) {bound}")
    return [ast.parse(rule, mode="eval").body for rule in dict.fromkeys(rules)]


def _divisor_rules(function: ast.AST) -> list[ast.expr]:
    """A name ``function`` divides by, or takes a remainder by, is never zero (``channels //
    squeeze_rate`` of a rate the table gives 0.0 raises ``ZeroDivisionError``)."""
    divisors = {node.right.id for node in ast.walk(function)
                if isinstance(node, ast.BinOp) and isinstance(node.op, _DIVISIONS)
                and isinstance(node.right, ast.Name)}
    return [ast.parse(f"{name} != 0", mode="eval").body for name in sorted(divisors)]


def _layer_rules(function: ast.AST, namespace: dict[str, Any]) -> list[ast.expr]:
    """The rules torch's layers that ``function`` builds check: ``nn.GroupNorm(groups,
    channels)`` needs ``channels % groups == 0`` (an up-sampling block's channels added to
    its skip's must still divide by 32)."""
    rules: list[ast.expr] = []
    for node in ast.walk(function):
        if not (isinstance(node, ast.Call) and _names_group_norm(node.func, namespace)):
            continue
        given = dict(zip(("num_groups", "num_channels"), node.args, strict=False))
        given |= {k.arg: k.value for k in node.keywords if k.arg}
        if "num_groups" in given and "num_channels" in given:
            remainder = ast.BinOp(left=given["num_channels"], op=ast.Mod(),
                                  right=given["num_groups"])
            rules.append(ast.fix_missing_locations(ast.Compare(
                left=remainder, ops=[ast.Eq()], comparators=[ast.Constant(0)])))
    return rules


def _names_group_norm(func: ast.expr, namespace: dict[str, Any]) -> bool:
    """True when ``func`` is ``GroupNorm``, ``nn.GroupNorm`` or ``torch.nn.GroupNorm`` and
    names torch's layer in ``namespace``."""
    dotted = []
    while isinstance(func, ast.Attribute):
        dotted.insert(0, func.attr)
        func = func.value
    if not isinstance(func, ast.Name):
        return False
    held: Any = namespace.get(func.id)
    for attribute in dotted:
        held = user_attribute(held, attribute) if held is not None else None
    return held is torch.nn.GroupNorm


def _index_bound(iterated: ast.expr) -> str | None:
    """What a sequence indexed by the items of ``iterated`` needs of its length."""
    if isinstance(iterated, ast.Name):
        return f"> max({iterated.id}, default=-1)"
    if isinstance(iterated, ast.Call) and isinstance(iterated.func, ast.Name) \
            and iterated.func.id == "range" and len(iterated.args) == 1:
        stop = iterated.args[0]
        if isinstance(stop, ast.Call) and isinstance(stop.func, ast.Name) \
                and stop.func.id == "len" and len(stop.args) == 1 \
                and isinstance(stop.args[0], ast.Name):
            return f">= len({stop.args[0].id})"
        if isinstance(stop, (ast.Name, ast.Constant)):
            return f">= {ast.unparse(stop)}"
    return None


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


#: "please reduce the n_bins", "increase `sr`": a named argument to make smaller or larger.
_SMALLER_OR_LARGER = re.compile(r"\b(?:(reduce|decrease|lower)|(increase|raise|enlarge))\s+"
                                r"(?:the\s+)?[`'\"]?(\w+)", re.IGNORECASE)


def named_in_message(message: str, defaults: dict[str, Any]) -> dict[str, Any]:
    """The number-valued arguments of ``defaults`` that ``message`` asks to make smaller or
    larger, with their values: where the search starts for a class whose defaults it
    rejects."""
    return {name: defaults[name] for _, _, name in _SMALLER_OR_LARGER.findall(message)
            if name in defaults and type(defaults[name]) in (int, float)}


def message_rules(message: str, values: dict[str, Any]) -> list[ast.expr]:
    """Rules an error's message states about the arguments ``values`` were given: a value
    that must be divisible by a number (each argument that had that value), an argument
    that must be divisible by another named one, or one to make smaller or larger."""
    rules: list[str] = []
    for smaller, _, name in _SMALLER_OR_LARGER.findall(message):
        if name in values and type(values[name]) in (int, float):
            rules.append(f"{name} {'<' if smaller else '>'} {values[name]!r}")
    for value, divisor in _DIVISIBLE_VALUES.findall(message):
        if int(divisor) > 0:
            rules += [f"{name} % {int(divisor)} == 0" for name, given in values.items()
                      if type(given) is int and given == int(value)]
    for name, other in _DIVISIBLE_NAMES.findall(message):
        if name in values and other in values:
            rules.append(f"{name} % {other} == 0")
    return [ast.parse(rule, mode="eval").body for rule in dict.fromkeys(rules)]
