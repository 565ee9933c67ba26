"""A parameter of a test that pytest parametrizes with literal values, read as each of them
(at most ``MAX_PARAMETER_COMBINATIONS`` combinations; skipped and failing marks left out)."""

from __future__ import annotations

import ast
import itertools
import re

from fxcore.workspace.call_sites.bindings import (
    SCOPE_STATEMENTS,
    Bindings,
    Substituted,
    bind_in_block,
    substitute,
)
from fxcore.workspace.call_sites.literals import is_literal_call_argument

#: The most combinations of its parameters' values a call in a parametrized test is read
#: with: one call site each.
MAX_PARAMETER_COMBINATIONS = 8


#: The most combinations of several ``parametrize`` decorators' values looked at to choose them.
_MAX_COMBINATIONS_LOOKED_AT = 4096


#: Marks of a ``pytest.param`` entry that say the combination does not work.
_FAILING_MARKS = re.compile(r"\b(skip|skipif|xfail)\b")


def parametrized_bindings(tree: ast.Module) -> dict[int, list[Bindings]]:
    """For each call in the body of a test function that pytest parametrizes
    (``@pytest.mark.parametrize("depth", (4, 5))``, or through a module-level alias
    ``param = pytest.mark.parametrize``): its names' bindings for each chosen combination of
    the parameters' literal values (``_parameter_combinations``), a parameter bound to its
    value as an assignment at the top of the body would bind it. A parameter that is a
    fixture, or whose value is not literal, stays unbound."""
    aliases = {target.id for statement in tree.body if isinstance(statement, ast.Assign)
               and _names_parametrize(statement.value, set())
               for target in statement.targets if isinstance(target, ast.Name)}
    found: dict[int, list[Bindings]] = {}
    for function in ast.walk(tree):
        if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        combinations = _parameter_combinations(function, aliases)
        if not combinations:
            continue
        calls = [id(node) for node in _own_scope_nodes(function.body)
                 if isinstance(node, ast.Call)]
        for combination in combinations:
            bound_at: Bindings = {}
            bind_in_block(function.body, dict(combination), bound_at)
            for call in calls:
                found.setdefault(call, []).append(bound_at)
    return found


def _own_scope_nodes(statements: list[ast.stmt]) -> list[ast.AST]:
    """The nodes of ``statements`` outside the functions and classes they define."""
    nodes: list[ast.AST] = []
    pending: list[ast.AST] = list(statements)
    while pending:
        node = pending.pop()
        nodes.append(node)
        if not isinstance(node, SCOPE_STATEMENTS):
            pending.extend(ast.iter_child_nodes(node))
    return nodes


def _names_parametrize(function: ast.expr, aliases: set[str]) -> bool:
    """Whether ``function`` is ``parametrize`` as pytest spells it: an attribute chain ending
    in ``parametrize`` (``pytest.mark.parametrize``, ``mark.parametrize``) or an alias."""
    return (isinstance(function, ast.Attribute) and function.attr == "parametrize") or (
        isinstance(function, ast.Name) and function.id in aliases)


def _parameter_combinations(function: ast.FunctionDef | ast.AsyncFunctionDef,
                            aliases: set[str]) -> list[dict[str, Substituted]]:
    """Up to ``MAX_PARAMETER_COMBINATIONS`` combinations of the values ``function``'s
    ``parametrize`` decorators give its parameters, as pytest combines them (the product of
    the decorators, in their order). Each chosen combination is the one that adds most values
    not yet chosen, ties to the earlier: every value of each decorator is read before any is
    read twice, so ``(False, True)`` gives its ``True`` whatever the other decorators hold."""
    parameters = {argument.arg for argument in (*function.args.posonlyargs,
                                                *function.args.args,
                                                *function.args.kwonlyargs)}
    decorators = [entries for decorator in function.decorator_list
                  if (entries := _parametrize_entries(decorator, aliases, parameters))]
    if not decorators:
        return []
    remaining = list(itertools.islice(
        itertools.product(*(range(len(entries)) for entries in decorators)),
        _MAX_COMBINATIONS_LOOKED_AT))
    chosen: list[tuple[int, ...]] = []
    seen: set[tuple[int, int]] = set()  # (decorator, entry)
    while remaining and len(chosen) < MAX_PARAMETER_COMBINATIONS:
        best = max(range(len(remaining)), key=lambda position: (
            len(set(enumerate(remaining[position])) - seen), -position))
        combination = remaining.pop(best)
        chosen.append(combination)
        seen |= set(enumerate(combination))
    return [{name: value for decorator, entry in enumerate(combination)
             for name, value in decorators[decorator][entry].items()}
            for combination in chosen]


def _parametrize_entries(decorator: ast.expr, aliases: set[str],
                         parameters: set[str]) -> list[dict[str, Substituted]]:
    """The entries of a ``parametrize(argnames, argvalues)`` decorator, each as its literal
    values by parameter name; none for another decorator, an ``indirect`` one (its values go
    to fixtures) or one whose names or values are not written out. ``pytest.param(...)``
    entries are unwrapped, those marked ``skip``, ``skipif`` or ``xfail`` left out."""
    if not (isinstance(decorator, ast.Call) and _names_parametrize(decorator.func, aliases)):
        return []
    arguments = dict(zip(("argnames", "argvalues"), decorator.args, strict=False))
    arguments.update({keyword.arg: keyword.value for keyword in decorator.keywords
                      if keyword.arg is not None})
    names = _literal_or_none(arguments.get("argnames"))
    if isinstance(names, str):
        names = [name.strip() for name in names.split(",") if name.strip()]
    indirect = _literal_or_none(arguments.get("indirect", ast.Constant(False)))
    values = arguments.get("argvalues")
    if not (isinstance(names, (list, tuple)) and names
            and all(isinstance(name, str) for name in names)
            and isinstance(values, (ast.List, ast.Tuple)) and indirect is not True
            and isinstance(indirect, (bool, list, tuple))):
        return []
    direct = parameters - (set(indirect) if isinstance(indirect, (list, tuple)) else set())
    entries = []
    for entry in values.elts:
        if isinstance(entry, ast.Call) and isinstance(entry.func, ast.Attribute) \
                and entry.func.attr == "param":
            if any(keyword.arg == "marks" and _FAILING_MARKS.search(ast.unparse(keyword.value))
                   for keyword in entry.keywords):
                continue
            written = list(entry.args)
        elif len(names) == 1:
            written = [entry]
        else:
            written = list(entry.elts) if isinstance(entry, (ast.List, ast.Tuple)) else []
        if len(written) != len(names):
            continue
        entries.append({name: substitute(value, {}) for name, value in zip(
            names, written, strict=True) if name in direct and is_literal_call_argument(value)})
    return entries


def _literal_or_none(node: ast.expr | None) -> object:
    if node is None:
        return None
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
