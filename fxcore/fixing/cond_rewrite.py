"""A data-dependent ``if`` as ``torch.cond`` (FX401, GB0170): the unsafe fix that keeps every
branch in the exported or compiled graph, with libcst.

Only ``if`` statements of a shape whose rewrite means what the ``if`` meant are rewritten
(``cond_branches`` reads them):

- each condition is one comparison (``x.sum() > 0``) or an ``.all()``/``.any()``: a bool that
  ``torch.cond`` takes as its predicate (a one-element bool tensor or a SymBool); or ``not``,
  ``and``, ``or`` over those, names and attributes (``not skip or synced``), which becomes
  ``torch.logical_not``/``logical_and``/``logical_or`` of ``torch.as_tensor`` of each
  operand (a Python bool among them too);
- either every branch is one ``return <expression>``, or each branch of an ``if``/``else``
  only assigns names (``y = <expression>``, one statement per name, no expression reading a
  name its branch assigned before it): a name one branch leaves alone keeps its value, so it
  must be a parameter or assigned in an earlier statement of the same block;
- in the ``return`` form, ``elif`` clauses become nested ``torch.cond`` calls, and an ``if``
  (``elif``) without an ``else`` is an early return: the statements after it in its block are
  its fall-through, and are taken into the rewrite when they are a ``return <expression>``,
  or another such ``if`` and what it falls through to (any other statement between them, or
  the end of the function, and nothing is rewritten);
- no expression has an effect of its own that the rewrite could reorder or repeat: no ``:=``,
  ``yield``, ``await``, in-place method (``add_``), ``print`` or zero-argument ``super``;
- the ``if`` is a statement of a function's block.

The branches become lambdas without arguments (torch.cond traces what they close over), and a
value a branch returns unchanged (a name or an attribute) is cloned: ``torch.cond`` refuses a
branch whose output aliases its input. What torch.cond also needs, outputs of one shape and
dtype in every branch, is known only when it runs: fx-lsp checks the file again after the
edit. It is unsafe in ruff's sense: the lambdas are traced both when exported or compiled, and
the comments inside what it replaces move above the new statement.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from fxcore.fixing.cond_branches import (
    Branch,
    Choice,
    Rewrite,
    branches,
    is_boolean_combination,
    rewrite_at,
)
from fxcore.fixing.libcst_edits import parse_source
from fxcore.fixing.pt2_fixes import torch_spelling
from fxcore.model.results import Range


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
    #: Its ``elif`` clauses' conditions: a failure there is the rewrite's too.
    elif_conditions: tuple[Range, ...] = ()
    #: The statements it replaces: the ``if``, and for an early return those after it.
    statements: int = 1
    #: The branches the graph keeps.
    branches: int = 2

    def covers(self, line: int, column: int) -> bool:
        """Whether a failure at ``line``/``column`` is on one of the site's conditions."""
        return any((condition.line, condition.column) <= (line, column)
                   < (condition.end_line, condition.end_column)
                   for condition in (Range(self.line, self.column, self.end_line,
                                           self.end_column), *self.elif_conditions))

    def label(self) -> str:
        """``the if``, ``the if/elif and the return after it``: what the rewrite replaces."""
        after = {1: "", 2: " and the return after it"}.get(self.statements,
                                                          " and the statements after it")
        return f"the if{'/elif' if self.elif_conditions else ''}{after}"


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
        self.found: dict[tuple[int, int], tuple[CondSite, Rewrite]] = {}
        self._parameters: list[set[str]] = []

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        parameters = node.params
        every = [*parameters.posonly_params, *parameters.params, *parameters.kwonly_params]
        every += [star for star in (parameters.star_arg, parameters.star_kwarg)
                  if isinstance(star, cst.Param)]
        self._parameters.append({param.name.value for param in every})

    def leave_FunctionDef(self, original_node: cst.FunctionDef) -> None:
        self._parameters.pop()

    def _range(self, node: cst.CSTNode, start_node: cst.CSTNode | None = None) -> Range:
        start = self.get_metadata(PositionProvider, start_node or node).start
        end = self.get_metadata(PositionProvider, node).end
        return Range(start.line, start.column + 1, end.line, end.column + 1)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        if not self._parameters:
            return
        bound = set(self._parameters[-1])
        for index, statement in enumerate(node.body):
            rewrite = rewrite_at(node.body, index, bound)
            if rewrite is not None and isinstance(statement, cst.If):
                first = self._range(statement.test, statement)
                site = CondSite(first.line, first.column, first.end_line, first.end_column,
                                rewrite.names,
                                tuple(self._range(test) for test in rewrite.elif_tests),
                                rewrite.statements, branches(rewrite.choice))
                self.found[(site.line, site.column)] = (site, rewrite)
            bound |= _assigned_here(statement)


def _find(module: cst.Module) -> dict[tuple[int, int], tuple[CondSite, Rewrite]]:
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


def _predicate(test: cst.BaseExpression, torch: str, module: cst.Module) -> str:
    """The condition as a tensor: a comparison or ``.all()``/``.any()`` as it is, ``not``,
    ``and`` and ``or`` as ``torch.logical_*`` of their operands, each made a tensor (a
    Python bool or number one too): both operands are evaluated, which the shapes
    ``cond_branches`` accepts allow (names, attributes and comparisons without effects)."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return f"{torch}.logical_not({_operand(test.expression, torch, module)})"
    if isinstance(test, cst.BooleanOperation):
        name = "logical_and" if isinstance(test.operator, cst.And) else "logical_or"
        return (f"{torch}.{name}({_operand(test.left, torch, module)}, "
                f"{_operand(test.right, torch, module)})")
    return module.code_for_node(test)


def _operand(test: cst.BaseExpression, torch: str, module: cst.Module) -> str:
    if is_boolean_combination(test):
        return _predicate(test, torch, module)
    return f"{torch}.as_tensor({module.code_for_node(test)})"


def _call(choice: Choice, torch: str, module: cst.Module) -> str:
    """``torch.cond(<test>, lambda: ..., lambda: ...)``, nested for a further choice."""
    return (f"{torch}.cond({_predicate(choice.test, torch, module)}, "
            f"{_branch(choice.true, torch, module)}, {_branch(choice.false, torch, module)})")


def _branch(branch: Branch, torch: str, module: cst.Module) -> str:
    """``lambda: x * 2`` (``lambda: (a, b)``): a name or an attribute taken as it is is cloned."""
    if isinstance(branch, Choice):
        return f"lambda: {_call(branch, torch, module)}"
    texts = [module.code_for_node(value) for value in branch]
    texts = [f"{text}.clone()" if isinstance(value, (cst.Name, cst.Attribute)) else text
             for text, value in zip(texts, branch, strict=True)]
    return f"lambda: {texts[0]}" if len(texts) == 1 else f"lambda: ({', '.join(texts)})"


class _IfToCond(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, module: cst.Module, rewrite: Rewrite, position: tuple[int, int]
                 ) -> None:
        super().__init__()
        self.module = module
        self.rewrite = rewrite
        self.position = position

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock,
                            updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        for index, located in enumerate(original_node.body):
            start = self.get_metadata(PositionProvider, located).start
            if isinstance(located, cst.If) and (start.line, start.column + 1) == self.position:
                return updated_node.with_changes(body=[
                    *updated_node.body[:index], self._statement(located),
                    *updated_node.body[index + self.rewrite.statements:]])
        return updated_node

    def _statement(self, original: cst.If) -> cst.BaseStatement:
        rewrite = self.rewrite
        call = _call(rewrite.choice, torch_spelling(self.module) or "torch", self.module)
        target = f"{', '.join(rewrite.names)} = " if rewrite.names else "return "
        statement = cst.parse_statement(f"{target}{call}\n")
        moved = [cst.EmptyLine(comment=comment) for comment in rewrite.comments]
        return statement.with_changes(leading_lines=[*original.leading_lines, *moved])


def if_to_cond(source: str, line: int, column: int) -> str:
    """Rewrite the ``if`` whose ``if`` keyword is at ``line``/``column`` as ``torch.cond``
    (with the statements after it that an early return takes); ``source`` itself when it is
    not one of ``cond_sites``."""
    module = parse_source(source)
    found = _find(module).get((line, column))
    if found is None:
        return source
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    return wrapper.visit(_IfToCond(module, found[1], (line, column))).code
