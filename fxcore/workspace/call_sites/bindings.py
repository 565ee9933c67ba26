"""Bare names read as what they were last bound to in the same scope (``model = GPT(...)``
then ``Wrapper(model)``), with bounds on what a chain of bindings may grow to."""

from __future__ import annotations

import ast
from typing import NamedTuple

from fxcore.workspace.call_sites.literals import called_class_name, is_literal_call_argument

#: Methods of ``nn.Module`` that return the module itself: ``model = Net(...).cuda()`` binds
#: ``model`` to the ``Net`` call.
_SELF_RETURNING_METHODS = frozenset({"cuda", "cpu", "eval", "train", "to", "float", "half",
                                     "double", "bfloat16", "requires_grad_"})


#: The most nodes, and the deepest nesting of calls, a call may have once its bare names are
#: replaced by what they are bound to: each replacement copies a whole expression, so a chain
#: of bindings that each use the one before twice would otherwise double the text at every
#: step, and a long chain (``a1 = Net(a0)``, ``a2 = Net(a1)``, ...) would nest deeper than
#: ``ast.unparse`` and the worker's evaluation recurse.
MAX_SUBSTITUTED_NODES = 2000


MAX_SUBSTITUTED_DEPTH = 16


#: Statements that open a scope of their own: their bodies bind apart from the code around.
SCOPE_STATEMENTS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


#: Expressions whose names are their own (comprehension variables, lambda parameters).
_SCOPE_EXPRESSIONS = (ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


class Substituted(NamedTuple):
    """An expression with its bare names replaced (``substituted``)."""

    expression: ast.expr
    nodes: int
    #: How deeply calls nest in it: 0 for a literal, 1 for a call of literals.
    depth: int

    def within_bounds(self) -> bool:
        return self.nodes <= MAX_SUBSTITUTED_NODES and self.depth <= MAX_SUBSTITUTED_DEPTH


#: The expression a name is bound to, by ``id`` of each ``ast.Name`` that reads it.
Bindings = dict[int, Substituted]


def bound_names(tree: ast.Module) -> Bindings:
    """For each bare name read in ``tree`` (a module, a README block, a docstring's examples)
    whose latest plain assignment earlier in the same scope (module, function or class body)
    gave it a literal or a literal call: that expression, its own bare names replaced the same
    way (``model = TransformerWrapper(...)`` then ``AutoregressiveWrapper(model)``). Any other
    binding of the name (``for``, ``with``, augmented, tuple targets, ``del``) forgets it."""
    bound_at: Bindings = {}
    bind_in_block(tree.body, {}, bound_at)
    return bound_at


def bind_in_block(statements: list[ast.stmt], bound: dict[str, Substituted],
                   bound_at: Bindings) -> None:
    for statement in statements:
        if isinstance(statement, SCOPE_STATEMENTS):
            bind_in_block(statement.body, {}, bound_at)
            bound.pop(statement.name, None)
            continue
        # A compound statement's header (an ``if`` test, ``for`` target, ``with`` item,
        # ``except`` clause, ``case`` pattern) binds before its blocks run, in order.
        blocks: list[tuple[str | None, list[ast.stmt]]] = []  # (the name it binds, block)
        headers: list[ast.AST] = []
        for _field, value in ast.iter_fields(statement):
            for item in value if isinstance(value, list) else [value]:
                if isinstance(item, ast.stmt):
                    if not blocks or blocks[-1][1] is not value:
                        blocks.append((None, value))
                elif isinstance(item, ast.ExceptHandler):
                    headers += [part for part in (item.type,) if part is not None]
                    blocks.append((item.name, item.body))
                elif isinstance(item, ast.match_case):
                    headers += [part for part in (item.pattern, item.guard) if part is not None]
                    blocks.append((None, item.body))
                elif isinstance(item, ast.AST):
                    headers.append(item)
        for header in headers:
            _note_reads(header, bound, bound_at)
        if blocks:
            for header in headers:
                _forget_stored(header, bound)
            for name, block in blocks:
                bound.pop(name or "", None)
                bind_in_block(block, bound, bound_at)
        else:
            _bind_statement(statement, bound, bound_at)


def _note_reads(node: ast.AST, bound: dict[str, Substituted],
                bound_at: Bindings) -> None:
    pending = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, _SCOPE_EXPRESSIONS):
            continue
        if (isinstance(current, ast.Name) and isinstance(current.ctx, ast.Load)
                and current.id in bound):
            bound_at[id(current)] = bound[current.id]
        else:
            pending.extend(ast.iter_child_nodes(current))


def _forget_stored(node: ast.AST, bound: dict[str, Substituted]) -> None:
    """Forget every name ``node`` binds (targets, ``as`` names, match captures)."""
    for inner in ast.walk(node):
        if isinstance(inner, ast.Name) and not isinstance(inner.ctx, ast.Load):
            bound.pop(inner.id, None)
        for captured in (getattr(inner, "name", None), getattr(inner, "rest", None)):
            if isinstance(captured, str):
                bound.pop(captured, None)


def _bind_statement(statement: ast.stmt, bound: dict[str, Substituted],
                    bound_at: Bindings) -> None:
    targets: list[ast.expr] = []
    value: ast.expr | None = None
    if isinstance(statement, ast.Assign):
        targets, value = statement.targets, statement.value
    elif isinstance(statement, ast.AnnAssign) and statement.simple:
        targets, value = [statement.target], statement.value
    if value is not None and targets and all(isinstance(target, ast.Name)
                                             for target in targets):
        substituted = substitute(_without_self_returning_calls(value), bound_at)
        if substituted.within_bounds() and is_literal_call_argument(substituted.expression):
            for target in targets:
                assert isinstance(target, ast.Name)
                bound[target.id] = substituted
            return
    _forget_stored(statement, bound)


def _without_self_returning_calls(value: ast.expr) -> ast.expr:
    """``Net(...)`` for ``Net(...).cuda().eval()``: the module those methods return."""
    inner = value
    while (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute)
           and inner.func.attr in _SELF_RETURNING_METHODS):
        inner = inner.func.value
    return inner if isinstance(inner, ast.Call) and called_class_name(inner) else value


def substitute(node: ast.expr, bound_at: Bindings) -> Substituted:
    """``node`` with each bare name given as an argument of a call (at any depth of nested
    calls) replaced by the expression it is bound to, with its size; ``node`` itself when
    nothing is replaced."""
    if isinstance(node, ast.Name) and id(node) in bound_at:
        return bound_at[id(node)]
    if not isinstance(node, ast.Call):
        return Substituted(node, sum(1 for _ in ast.walk(node)), 0)
    args = [substitute(argument, bound_at) for argument in node.args]
    values = [substitute(keyword.value, bound_at) for keyword in node.keywords]
    nodes = (1 + sum(1 for _ in ast.walk(node.func)) + sum(part.nodes for part in args)
             + sum(1 + part.nodes for part in values))
    depth = 1 + max((part.depth for part in [*args, *values]), default=0)
    if all(new.expression is old for new, old in zip(args, node.args, strict=True)) and all(
            new.expression is keyword.value
            for new, keyword in zip(values, node.keywords, strict=True)):
        return Substituted(node, nodes, depth)
    call = ast.Call(func=node.func, args=[new.expression for new in args],
                    keywords=[ast.keyword(arg=keyword.arg, value=new.expression)
                              for new, keyword in zip(values, node.keywords, strict=True)])
    return Substituted(ast.copy_location(call, node), nodes, depth)
