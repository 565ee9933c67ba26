"""Branches and loops on tensor data (GB0170, GB7000) as masked arithmetic, with libcst;
idempotent. ``cond_rewrite`` takes ``if`` statements (``torch.cond``); these take:

- a conditional expression, ``a if <condition> else b``, whose condition is a comparison or an
  ``.any()``/``.all()``: ``torch.where(<condition>, a, b)``. Both branches are computed and the
  one the condition names is taken, element for element, so the outputs are the same where
  both branches have one shape (fx-lsp checks the file again after the edit); unsafe, since the
  branch not taken now runs too;
- a loop bounded by a static maximum that stops early on tensor data::

      for _ in range(8):
          if (x.abs() < 1).all():
              break
          x = x * 0.5

  as the same loop, every step masked: ``stop = (x.abs() < 1).all()`` then
  ``x = torch.where(stop, x, x * 0.5)``. Once the condition holds, what it reads no longer
  changes, so it holds to the end and the values are those the early stop left. Only where the
  ``if ...: break`` is the loop's first statement, the condition reads no loop variable, and the
  rest only assigns names bound before the loop (``y = <expression>``, one name each, no
  in-place or augmented assignment); unsafe, since every step now runs.
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from fxcore.fixing.libcst_edits import parse_source
from fxcore.fixing.pt2_fixes import torch_spelling
from fxcore.fixing.statement_edits import code, is_method_call, rewrite_statement


def is_condition(node: cst.BaseExpression) -> bool:
    """A comparison or an ``.any()``/``.all()``: a bool tensor ``torch.where`` selects by."""
    return (isinstance(node, cst.Comparison) and len(node.comparisons) == 1) or \
        is_method_call(node, ("any", "all"))


class _IfExpToWhere(cst.CSTTransformer):
    def __init__(self, torch: str) -> None:
        super().__init__()
        self.torch = torch

    def leave_IfExp(self, original_node: cst.IfExp, updated_node: cst.IfExp
                    ) -> cst.BaseExpression:
        if not is_condition(updated_node.test):
            return updated_node
        return cst.parse_expression(
            f"{self.torch}.where({code(updated_node.test)}, {code(updated_node.body)}, "
            f"{code(updated_node.orelse)})").with_changes(lpar=updated_node.lpar,
                                                         rpar=updated_node.rpar)


def if_expression_to_where(source: str, line: int) -> str:
    """The statement starting on ``line`` with each conditional expression on a tensor
    condition as ``torch.where``."""
    return rewrite_statement(source, line, _IfExpToWhere)


def names_in(node: cst.CSTNode) -> set[str]:
    found: set[str] = set()

    class Collect(cst.CSTVisitor):
        def visit_Name(self, name: cst.Name) -> None:
            found.add(name.value)

    node.visit(Collect())
    return found


def assigned_name(statement: cst.BaseStatement) -> str | None:
    """``y`` of a line that is only ``y = <expression>``."""
    if not (isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1):
        return None
    small = statement.body[0]
    if isinstance(small, cst.Assign) and len(small.targets) == 1 and \
            isinstance(small.targets[0].target, cst.Name):
        return small.targets[0].target.value
    return None


def _stop_test(statement: cst.BaseStatement) -> cst.BaseExpression | None:
    """The condition of ``if <condition>: break`` with nothing else, else None."""
    if not (isinstance(statement, cst.If) and statement.orelse is None
            and isinstance(statement.body, cst.IndentedBlock)
            and len(statement.body.body) == 1):
        return None
    only = statement.body.body[0]
    if not (isinstance(only, cst.SimpleStatementLine) and len(only.body) == 1
            and isinstance(only.body[0], cst.Break)):
        return None
    test = statement.test
    inner = test.expression if isinstance(test, cst.UnaryOperation) and \
        isinstance(test.operator, cst.Not) else test
    return test if is_condition(inner) else None


class _MaskLoop(cst.CSTTransformer):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, line: int, torch: str, bound: set[str]) -> None:
        super().__init__()
        self.line = line
        self.torch = torch
        self.bound = bound

    def leave_For(self, original_node: cst.For, updated_node: cst.For) -> cst.BaseStatement:
        body = original_node.body
        if not (isinstance(body, cst.IndentedBlock) and len(body.body) > 1
                and self.get_metadata(PositionProvider, body.body[0]).start.line == self.line
                and original_node.orelse is None and original_node.asynchronous is None
                and isinstance(original_node.iter, cst.Call)
                and isinstance(original_node.iter.func, cst.Name)
                and original_node.iter.func.value == "range"):
            return updated_node
        test = _stop_test(body.body[0])
        names = [assigned_name(statement) for statement in body.body[1:]]
        loop_names = names_in(original_node.target)
        if test is None or None in names or not set(names) <= self.bound - loop_names or \
                names_in(test) & loop_names:
            return updated_node
        stop = next(name for name in ("stop", "stopped", "done_") if name not in
                    self.bound | names_in(original_node))
        condition = code(test.expression) if isinstance(test, cst.UnaryOperation) else code(test)
        if isinstance(test, cst.UnaryOperation):
            condition = f"{self.torch}.logical_not({condition})"
        lines = [cst.parse_statement(f"{stop} = {condition}\n")]
        for statement in body.body[1:]:
            assert isinstance(statement, cst.SimpleStatementLine)
            small = statement.body[0]
            assert isinstance(small, cst.Assign)
            name = code(small.targets[0].target)
            lines.append(statement.with_changes(body=[small.with_changes(value=cst.parse_expression(
                f"{self.torch}.where({stop}, {name}, {code(small.value)})"))]))
        return updated_node.with_changes(body=body.with_changes(body=lines))


class BoundBefore(cst.CSTVisitor):
    """Names bound in the function around ``line`` before it: parameters and assignments."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, line: int) -> None:
        super().__init__()
        self.line = line
        self.names: set[str] = set()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        where = self.get_metadata(PositionProvider, node)
        if where.start.line <= self.line <= where.end.line:
            self.names |= {param.name.value for param in node.params.params}
            for statement in node.body.body if isinstance(node.body, cst.IndentedBlock) else ():
                if self.get_metadata(PositionProvider, statement).end.line < self.line and \
                        (name := assigned_name(statement)) is not None:
                    self.names.add(name)


def mask_bounded_loop(source: str, line: int) -> str:
    """The ``for ... in range(...)`` loop whose first statement, ``if <condition>: break``,
    starts on ``line``, with every step masked by the condition; ``source`` itself when it
    is not of that shape."""
    try:
        module = parse_source(source)
    except cst.ParserSyntaxError:
        return source
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    bound = BoundBefore(line)
    wrapper.visit(bound)
    return wrapper.visit(_MaskLoop(line, torch_spelling(module) or "torch", bound.names)).code
