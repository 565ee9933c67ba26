"""A data-dependent ``if`` as ``torch.cond`` (FX401, GB0170): the unsafe fix that keeps both
branches in the exported or compiled graph, with libcst.

Only ``if`` statements of a shape whose rewrite means what the ``if`` meant are rewritten:

- the condition is one comparison (``x.sum() > 0``) or an ``.all()``/``.any()``: a bool that
  ``torch.cond`` takes as its predicate (a one-element bool tensor or a SymBool);
- either both branches are one ``return <expression>`` each, or each branch only assigns names
  (``y = <expression>``, one statement per name, no expression reading a name its branch
  assigned before it): a name one branch leaves alone keeps its value, so it must be a
  parameter or assigned in an earlier statement of the same block;
- no expression has an effect of its own that the rewrite could reorder or repeat: no ``:=``,
  ``yield``, ``await``, in-place method (``add_``), ``print`` or zero-argument ``super``;
- no ``elif``, and the ``if`` is a statement of a function's block.

The branches become lambdas without arguments (torch.cond traces what they close over), and a
value a branch returns unchanged (a name or an attribute) is cloned: ``torch.cond`` refuses a
branch whose output aliases its input. What torch.cond also needs, outputs of one shape and
dtype in both branches, is known only when it runs: fx-lsp checks the file again after the
edit. It is unsafe in ruff's sense: the lambdas are traced both when exported or compiled, and
the comments inside the branches move above the new statement.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from fxcore.fixing.libcst_edits import dotted_name, parse_source
from fxcore.fixing.pt2_fixes import torch_spelling

_COMPARISONS = (cst.LessThan, cst.LessThanEqual, cst.GreaterThan, cst.GreaterThanEqual,
                cst.Equal, cst.NotEqual)


@dataclass(frozen=True)
class CondSite:
    """An ``if`` that can be rewritten: from its ``if`` to the end of its condition (1-based
    lines, character columns, end exclusive) and what the rewrite assigns or returns."""

    line: int
    column: int
    end_line: int
    end_column: int
    #: The names assigned, in order; () for the ``return`` form.
    names: tuple[str, ...]


@dataclass(frozen=True)
class _Rewrite:
    names: tuple[str, ...]
    #: Per branch (true, false), the expression of each name (or the returned one).
    values: tuple[tuple[cst.BaseExpression, ...], tuple[cst.BaseExpression, ...]]
    comments: tuple[cst.Comment, ...]


def _is_predicate(test: cst.BaseExpression) -> bool:
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


def _returned(statements: list[cst.BaseSmallStatement]) -> cst.BaseExpression | None:
    if len(statements) == 1 and isinstance(statements[0], cst.Return) and \
            statements[0].value is not None and _pure(statements[0].value):
        return statements[0].value
    return None


class _Comments(cst.CSTVisitor):
    def __init__(self) -> None:
        self.comments: list[cst.Comment] = []

    def visit_Comment(self, node: cst.Comment) -> None:
        self.comments.append(node)


def _comments(node: cst.If) -> tuple[cst.Comment, ...]:
    """The comments inside the ``if`` (those above it stay where they are)."""
    visitor = _Comments()
    node.with_changes(leading_lines=[]).visit(visitor)
    return tuple(visitor.comments)


def _rewrite(node: cst.If, bound: set[str]) -> _Rewrite | None:
    """What the rewrite of ``node`` makes, or None when its shape is not one rewritten."""
    if node.orelse is not None and not isinstance(node.orelse, cst.Else):
        return None  # elif
    if not _is_predicate(node.test) or not _pure(node.test):
        return None
    branches = [_small_statements(node.body),
                _small_statements(node.orelse.body) if node.orelse is not None else []]
    if branches[0] is None or branches[1] is None:
        return None
    returned = [_returned(branch) for branch in branches]
    if returned[0] is not None and returned[1] is not None:
        return _Rewrite((), ((returned[0],), (returned[1],)), _comments(node))
    assigned = [_assignments(branch) for branch in branches]
    if assigned[0] is None or assigned[1] is None or not (assigned[0] or assigned[1]):
        return None
    names = tuple(dict.fromkeys([*assigned[0], *assigned[1]]))
    if any(name not in bound for name in names
           if name not in assigned[0] or name not in assigned[1]):
        return None  # a branch would leave the name unbound
    values = tuple(tuple(branch.get(name, cst.Name(name)) for name in names)
                   for branch in assigned)
    return _Rewrite(names, (values[0], values[1]), _comments(node))


def _assigned_here(statement: cst.BaseStatement) -> set[str]:
    """Names that a simple statement line binds for sure."""
    names: set[str] = set()
    if not isinstance(statement, cst.SimpleStatementLine):
        return names
    for small in statement.body:
        targets: list[cst.BaseExpression] = []
        if isinstance(small, cst.Assign):
            targets = [target.target for target in small.targets]
        elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
            targets = [small.target]
        for target in targets:
            elements = [element.value for element in target.elements] \
                if isinstance(target, (cst.Tuple, cst.List)) else [target]
            names |= {element.value for element in elements if isinstance(element, cst.Name)}
    return names


class _Finder(cst.CSTVisitor):
    """The rewritable ``if`` statements of a module's functions, by their position."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self) -> None:
        super().__init__()
        self.found: dict[tuple[int, int], tuple[CondSite, _Rewrite]] = {}
        self._parameters: list[set[str]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        parameters = node.params
        every = [*parameters.posonly_params, *parameters.params, *parameters.kwonly_params]
        every += [star for star in (parameters.star_arg, parameters.star_kwarg)
                  if isinstance(star, cst.Param)]
        self._parameters.append({param.name.value for param in every})

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._parameters.pop()

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        if not self._parameters:
            return
        bound = set(self._parameters[-1])
        for statement in node.body:
            if isinstance(statement, cst.If):
                rewrite = _rewrite(statement, bound)
                if rewrite is not None:
                    start = self.get_metadata(PositionProvider, statement).start
                    end = self.get_metadata(PositionProvider, statement.test).end
                    site = CondSite(start.line, start.column + 1, end.line, end.column + 1,
                                    rewrite.names)
                    self.found[(site.line, site.column)] = (site, rewrite)
            bound |= _assigned_here(statement)


def _find(module: cst.Module) -> dict[tuple[int, int], tuple[CondSite, _Rewrite]]:
    finder = _Finder()
    MetadataWrapper(module, unsafe_skip_copy=True).visit(finder)
    return finder.found


def cond_sites(source: str) -> tuple[CondSite, ...] | None:
    """The ``if`` statements ``if_to_cond`` rewrites (None when libcst cannot parse the file)."""
    try:
        module = parse_source(source)
    except cst.ParserSyntaxError:
        return None
    return tuple(site for site, _ in _find(module).values())


def _branch(values: tuple[cst.BaseExpression, ...], module: cst.Module) -> str:
    """``lambda: x * 2`` (``lambda: (a, b)``): a name or an attribute taken as it is is cloned."""
    texts = [module.code_for_node(value) for value in values]
    texts = [f"{text}.clone()" if isinstance(value, (cst.Name, cst.Attribute)) else text
             for text, value in zip(texts, values, strict=True)]
    return f"lambda: {texts[0]}" if len(texts) == 1 else f"lambda: ({', '.join(texts)})"


class _IfToCond(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, module: cst.Module, rewrite: _Rewrite, position: tuple[int, int]
                 ) -> None:
        super().__init__()
        self.module = module
        self.rewrite = rewrite
        self.position = position

    def leave_If(self, original_node: cst.If, updated_node: cst.If) -> cst.BaseStatement:
        start = self.get_metadata(PositionProvider, original_node).start
        if (start.line, start.column + 1) != self.position:
            return updated_node
        rewrite, module = self.rewrite, self.module
        call = (f"{torch_spelling(module) or 'torch'}.cond("
                f"{module.code_for_node(original_node.test)}, "
                f"{_branch(rewrite.values[0], module)}, {_branch(rewrite.values[1], module)})")
        target = f"{', '.join(rewrite.names)} = " if rewrite.names else "return "
        statement = cst.parse_statement(f"{target}{call}\n")
        moved = [cst.EmptyLine(comment=comment) for comment in rewrite.comments]
        return statement.with_changes(leading_lines=[*original_node.leading_lines, *moved])


def if_to_cond(source: str, line: int, column: int) -> str:
    """Rewrite the ``if`` whose ``if`` keyword is at ``line``/``column`` as ``torch.cond``;
    ``source`` itself when it is not one of ``cond_sites``."""
    module = parse_source(source)
    found = _find(module).get((line, column))
    if found is None:
        return source
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    return wrapper.visit(_IfToCond(module, found[1], (line, column))).code
