"""A value read into Python with ``.item()`` (GB0124) kept a tensor where it only feeds tensor
arithmetic or a condition, with libcst (``statement_edits``); idempotent.

- ``x * t.item()``, ``y - y.mean().item()``, ``x / norm.item()``: an ``.item()`` that is an
  operand of ``+``, ``-``, ``*`` or ``/`` beside an operand that is neither a number literal nor
  another ``.item()`` loses its ``.item()``. A 0-d tensor takes no part in type promotion
  beside a tensor of its kind, so ``x * t`` is the tensor ``x * t.item()`` was, value for
  value; where the other operand is a Python number after all, the result is a 0-d tensor
  instead of a number, hence unsafe;
- ``a if t.item() else b``, ``a if (x.mean() > 0).item() else b``: the condition's ``.item()``
  goes, which the truth of a one-element tensor makes the same condition; the branch on tensor
  data it leaves is ``loop_fixes``' ``torch.where``.

Elsewhere (a number passed to ``range``, a keyword, a list) the fix is torch's own hint,
``torch._dynamo.config.capture_scalar_outputs = True`` (``recompile_fixes.set_config_option``).
"""

from __future__ import annotations

import libcst as cst

from fxcore.fixing.statement_edits import is_method_call, rewrite_statement

_ARITHMETIC = (cst.Add, cst.Subtract, cst.Multiply, cst.Divide)


def _is_item(node: cst.BaseExpression) -> bool:
    return is_method_call(node, ("item",)) and not node.lpar


def _receiver(node: cst.Call) -> cst.BaseExpression:
    assert isinstance(node.func, cst.Attribute)
    return node.func.value


class _DropItem(cst.CSTTransformer):
    def __init__(self, torch: str) -> None:
        super().__init__()

    def leave_BinaryOperation(self, original_node: cst.BinaryOperation,
                              updated_node: cst.BinaryOperation) -> cst.BaseExpression:
        if not isinstance(updated_node.operator, _ARITHMETIC):
            return updated_node
        left, right = updated_node.left, updated_node.right
        for item, other, side in ((right, left, "right"), (left, right, "left")):
            if _is_item(item) and not _is_item(other) and \
                    not isinstance(other, (cst.Integer, cst.Float)):
                return updated_node.with_changes(**{side: _receiver(item)})
        return updated_node

    def leave_IfExp(self, original_node: cst.IfExp, updated_node: cst.IfExp
                    ) -> cst.BaseExpression:
        if _is_item(updated_node.test):
            return updated_node.with_changes(test=_receiver(updated_node.test))
        return updated_node


def drop_item(source: str, line: int) -> str:
    """The statement starting on ``line`` with each ``.item()`` it reads as an arithmetic
    operand or a conditional expression's condition kept a tensor."""
    return rewrite_statement(source, line, _DropItem)
