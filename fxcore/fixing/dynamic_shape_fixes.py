"""A reduction of a boolean-mask selection (GB0036: its shape depends on the data) as a
masked reduction of static shape, with libcst (``statement_edits``); idempotent.

- ``x[x > 0].sum()`` and ``torch.sum(x[x > 0])``: ``torch.where(x > 0, x, 0).sum()``;
- ``x[x > 0].mean()`` and ``torch.mean(x[x > 0])``: the sum over the count,
  ``(torch.where(x > 0, x, 0).sum() / (x > 0).sum())`` (an empty selection gives nan, as the
  mean of an empty tensor does).

The selection is ``x[x > 0]`` or ``x[torch.nonzero(x > 0, as_tuple=True)]`` (also
``(x > 0).nonzero(as_tuple=True)``): the mask is a comparison of the very name it selects from,
so that mask and tensor have one shape. (``masked_select`` meets no break from torch 2.13 on:
no fix is planned for it.) The elements summed are the same; the order of a float sum
may differ in its last bits, hence unsafe. Elsewhere (``nonzero``, ``unique``, a selection kept
as it is) the fix is torch's own hint, ``capture_dynamic_output_shape_ops``.
"""

from __future__ import annotations

import libcst as cst

from fxcore.fixing.libcst_edits import dotted_name
from fxcore.fixing.statement_edits import code, is_method_call, rewrite_statement

_REDUCTIONS = ("sum", "mean")


def _compares(mask: cst.BaseExpression, name: str) -> bool:
    """``x > 0`` for ``name`` x: one comparison whose left side is the name."""
    return isinstance(mask, cst.Comparison) and len(mask.comparisons) == 1 and \
        isinstance(mask.left, cst.Name) and mask.left.value == name


def _nonzero_tuple(node: cst.BaseExpression, torch: str) -> cst.BaseExpression | None:
    """The condition of ``torch.nonzero(c, as_tuple=True)`` or ``c.nonzero(as_tuple=True)``."""
    if not isinstance(node, cst.Call) or [arg.keyword.value for arg in node.args
                                          if arg.keyword is not None] != ["as_tuple"]:
        return None
    flag = node.args[-1].value
    if not (isinstance(flag, cst.Name) and flag.value == "True"):
        return None
    positional = [arg.value for arg in node.args if arg.keyword is None and not arg.star]
    if dotted_name(node.func) == f"{torch}.nonzero" and len(positional) == 1:
        return positional[0]
    if isinstance(node.func, cst.Attribute) and node.func.attr.value == "nonzero" and \
            not positional:
        return node.func.value
    return None


def _mask_and_tensor(node: cst.BaseExpression, torch: str) -> tuple[str, str] | None:
    """(mask, tensor) of ``x[x > 0]`` or ``x[torch.nonzero(x > 0, as_tuple=True)]``, as code,
    else None."""
    if not (isinstance(node, cst.Subscript) and isinstance(node.value, cst.Name)
            and len(node.slice) == 1 and isinstance(node.slice[0].slice, cst.Index)):
        return None
    mask = node.slice[0].slice.value
    mask = _nonzero_tuple(mask, torch) or mask
    if not _compares(mask, node.value.value):
        return None
    assert isinstance(mask, cst.Comparison)
    return code(mask.with_changes(lpar=[], rpar=[])), node.value.value  # (x > 0) is put in ( )


class _MaskedReduction(cst.CSTTransformer):
    def __init__(self, torch: str) -> None:
        super().__init__()
        self.torch = torch

    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call
                   ) -> cst.BaseExpression:
        if is_method_call(updated_node, _REDUCTIONS):
            assert isinstance(updated_node.func, cst.Attribute)
            selected, reduction = updated_node.func.value, updated_node.func.attr.value
        elif dotted_name(updated_node.func) in {f"{self.torch}.{name}" for name in _REDUCTIONS} \
                and len(updated_node.args) == 1 and updated_node.args[0].keyword is None \
                and not updated_node.args[0].star:
            selected = updated_node.args[0].value
            reduction = (dotted_name(updated_node.func) or "").rsplit(".", 1)[1]
        else:
            return updated_node
        found = _mask_and_tensor(selected, self.torch)
        if found is None:
            return updated_node
        mask, tensor = found
        total = f"{self.torch}.where({mask}, {tensor}, 0).sum()"
        text = total if reduction == "sum" else f"({total} / ({mask}).sum())"
        return cst.parse_expression(text)


def masked_reduction(source: str, line: int) -> str:
    """The statement starting on ``line`` with each sum or mean of ``x[x > 0]`` masked."""
    return rewrite_statement(source, line, _MaskedReduction)
