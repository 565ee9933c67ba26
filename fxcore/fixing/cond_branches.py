"""Which ``if`` statements ``cond_rewrite`` turns into ``torch.cond``, and into what: the shapes
its module docstring lists, read from libcst nodes. A rewrite is a ``Choice`` (nested for an
``elif`` or an early return's fall-through) over the values each branch assigns or returns,
and the statements of its block that it replaces."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

import libcst as cst

from fxcore.fixing.libcst_edits import dotted_name

_COMPARISONS = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual,
                cst.Equal, cst.NotEqual)


@dataclass(frozen=True)
class Choice:
    """``torch.cond(test, lambda: <true>, lambda: <false>)``."""

    test: cst.BaseExpression
    true: Branch
    false: Branch


#: What a branch gives: the expression of each name assigned (or the one returned), or a
#: further choice (an ``elif``, or what an early return falls through to).
Branch: TypeAlias = "tuple[cst.BaseExpression, ...] | Choice"


@dataclass(frozen=True)
class Rewrite:
    #: The names assigned, in order; () for the ``return`` form.
    names: tuple[str, ...]
    choice: Choice
    #: How many statements of the block it replaces, from the ``if``: more than one for an
    #: early return, whose fall-through follows the ``if``.
    statements: int
    #: The comments inside what it replaces (those above the ``if`` stay where they are).
    comments: tuple[cst.Comment, ...]
    #: The conditions of the ``if``'s ``elif`` clauses, where a failure may be reported too.
    elif_tests: tuple[cst.BaseExpression, ...]


def branches(branch: Branch) -> int:
    """How many branches the graph keeps."""
    return branches(branch.true) + branches(branch.false) if isinstance(branch, Choice) else 1


def is_boolean_combination(test: cst.BaseExpression) -> bool:
    """``not a``, ``a and b``, ``a or b`` (nested), over names, attributes, comparisons and
    ``.all()``/``.any()``: ``cond_rewrite`` spells it with ``torch.logical_*``."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _is_operand(test.expression)
    return isinstance(test, cst.BooleanOperation) and _is_operand(test.left) and \
        _is_operand(test.right)


def _is_operand(test: cst.BaseExpression) -> bool:
    return isinstance(test, (cst.Name, cst.Attribute)) or _is_predicate(test)


def _is_predicate(test: cst.BaseExpression) -> bool:
    if is_boolean_combination(test):
        return True
    if isinstance(test, cst.Comparison):
        return len(test.comparisons) == 1 and isinstance(test.comparisons[0].operator,
                                                          _COMPARISONS)
    if isinstance(test, cst.Call) and isinstance(test.func, cst.Attribute) and \
            test.func.attr.value in ("all", "any"):
        receiver = dotted_name(test.func.value)
        return not test.args if receiver != "torch" else len(test.args) == 1
    return False


class _Effects(cst.CSTVisitor):
    """Whether an expression does something besides computing its value."""

    def __init__(self) -> None:
        self.found = False

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.found = True

    def visit_Yield(self, node: cst.Yield) -> None:
        self.found = True

    def visit_Await(self, node: cst.Await) -> None:
        self.found = True

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute):
            name = func.attr.value
            self.found |= name.endswith("_") and not name.endswith("__")
        elif isinstance(func, cst.Name):
            self.found |= func.value == "print" or (func.value == "super" and not node.args)


def _pure(node: cst.CSTNode) -> bool:
    visitor = _Effects()
    node.visit(visitor)
    return not visitor.found


def _is_condition(test: cst.BaseExpression) -> bool:
    return _is_predicate(test) and _pure(test)


class _Names(cst.CSTVisitor):
    def __init__(self) -> None:
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)


def _read_names(node: cst.CSTNode) -> set[str]:
    visitor = _Names()
    node.visit(visitor)
    return visitor.names


def _small_statements(body: cst.BaseSuite) -> list[cst.BaseSmallStatement] | None:
    """The statements of a branch, each a small statement alone on its line; None otherwise."""
    if isinstance(body, cst.SimpleStatementSuite):
        return list(body.body)
    found = []
    for statement in body.body:
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return None
        found.append(statement.body[0])
    return found


def _assignments(statements: list[cst.BaseSmallStatement]) -> dict[str, cst.BaseExpression] | None:
    """name -> expression of a branch that only assigns names, none read after it is assigned."""
    assigned: dict[str, cst.BaseExpression] = {}
    for statement in statements:
        if not (isinstance(statement, cst.Assign) and len(statement.targets) == 1
                and isinstance(statement.targets[0].target, cst.Name)):
            return None
        name = statement.targets[0].target.value
        if name in assigned or _read_names(statement.value) & assigned.keys() or \
                not _pure(statement.value):
            return None
        assigned[name] = statement.value
    return assigned


def _returned(statements: list[cst.BaseSmallStatement] | None) -> cst.BaseExpression | None:
    """The value of a branch that is one ``return <expression>``."""
    if statements is not None and len(statements) == 1 and \
            isinstance(statements[0], cst.Return) and statements[0].value is not None and \
            _pure(statements[0].value):
        return statements[0].value
    return None


class _Comments(cst.CSTVisitor):
    def __init__(self) -> None:
        self.comments: list[cst.Comment] = []

    def visit_Comment(self, node: cst.Comment) -> None:
        self.comments.append(node)


def _comments(nodes: Sequence[cst.CSTNode]) -> tuple[cst.Comment, ...]:
    visitor = _Comments()
    for node in nodes:
        node.visit(visitor)
    return tuple(visitor.comments)


def _arms(node: cst.If) -> tuple[list[cst.If], cst.BaseSuite | None]:
    """The ``if`` and its ``elif`` clauses, and the body of its ``else`` (None without one)."""
    arms = [node]
    while isinstance(arms[-1].orelse, cst.If):
        arms.append(arms[-1].orelse)
    last = arms[-1].orelse
    return arms, last.body if isinstance(last, cst.Else) else None


def _returns(block: Sequence[cst.BaseStatement], index: int) -> tuple[Branch, int] | None:
    """What the statements of ``block`` from ``index`` on return, and how many of them that
    takes: a ``return <expression>``, or an ``if`` (``elif``) chain whose branches each are
    one, ending in an ``else`` that is one too, or else followed by what it falls through
    to; None for any other statement, which the rewrite would have to move into a lambda."""
    if index >= len(block):
        return None  # the end of the function: it returns None there
    statement = block[index]
    if isinstance(statement, cst.SimpleStatementLine):
        value = _returned(list(statement.body))
        return ((value,), 1) if value is not None else None
    if not isinstance(statement, cst.If):
        return None
    arms, last = _arms(statement)
    values = [_returned(_small_statements(arm.body)) for arm in arms]
    if not all(_is_condition(arm.test) for arm in arms) or None in values:
        return None
    if last is not None:
        value = _returned(_small_statements(last))
        if value is None:
            return None
        branch, taken = (value,), 1
    else:
        rest = _returns(block, index + 1)
        if rest is None:
            return None
        branch, taken = rest[0], rest[1] + 1
    for arm, returned in zip(reversed(arms), reversed(values), strict=True):
        branch = Choice(arm.test, (returned,), branch)
    return branch, taken


def _assigning(node: cst.If, bound: set[str]) -> tuple[tuple[str, ...], Choice] | None:
    """An ``if`` (and ``else``) whose branches only assign names, none left unbound."""
    if node.orelse is not None and not isinstance(node.orelse, cst.Else):
        return None  # elif
    if not _is_condition(node.test):
        return None
    found = [_small_statements(node.body),
             _small_statements(node.orelse.body) if node.orelse is not None else []]
    assigned = [_assignments(branch) if branch is not None else None for branch in found]
    if assigned[0] is None or assigned[1] is None or not (assigned[0] or assigned[1]):
        return None
    names = tuple(dict.fromkeys([*assigned[0], *assigned[1]]))
    if any(name not in bound for name in names
           if name not in assigned[0] or name not in assigned[1]):
        return None  # a branch would leave the name unbound
    values = [tuple(branch.get(name, cst.Name(name)) for name in names) for branch in assigned]
    return names, Choice(node.test, values[0], values[1])


def rewrite_at(block: Sequence[cst.BaseStatement], index: int, bound: set[str]
               ) -> Rewrite | None:
    """The rewrite of the ``if`` that is statement ``index`` of ``block`` (``bound``: the names
    bound before it), or None when its shape is not one rewritten."""
    node = block[index]
    if not isinstance(node, cst.If):
        return None
    arms, _ = _arms(node)
    elif_tests = tuple(arm.test for arm in arms[1:])
    inside = [node.with_changes(leading_lines=[])]
    returned = _returns(block, index)
    if returned is not None and isinstance(returned[0], Choice):
        branch, taken = returned
        return Rewrite((), branch, taken, _comments([*inside, *block[index + 1:index + taken]]),
                       elif_tests)
    assigning = _assigning(node, bound)
    if assigning is None:
        return None
    return Rewrite(assigning[0], assigning[1], 1, _comments(inside), ())
