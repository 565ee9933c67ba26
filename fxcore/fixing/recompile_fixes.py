"""Source edits behind the quick fixes of torch.compile's recompilations (FX505-FX507, planned
by ``recompile_plan``), with libcst so that formatting and comments survive; idempotent.

- ``set_config_option``: the ``torch._dynamo.config`` / ``torch.compiler.config`` option a
  recompilation's hint from torch names, set at module scope after the imports, where it holds
  before any ``torch.compile`` of the file's classes runs (``import torch`` is the fix's
  ``import_edit``, as for ``pt2_fixes``);
- ``range_tensor_to_arange``: ``torch.tensor(list(range(n)))``, which makes torch.compile
  specialise ``n`` (FX506 on a size), as ``torch.arange(n)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from fxcore.fixing.libcst_edits import (
    EditAtPosition,
    dotted_name,
    edit_at,
    header_end,
    parse_source,
)
from fxcore.fixing.pt2_fixes import torch_spelling


def _assigned_names(module: cst.Module) -> set[str]:
    """The dotted names module-level statements assign (``torch._dynamo.config.x``)."""
    found = set()
    for statement in module.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign):
                found |= {name for target in small.targets
                          if (name := dotted_name(target.target)) is not None}
    return found


def set_config_option(source: str, option: str, value: bool) -> str:
    """Set ``option`` (``torch._dynamo.config.allow_unspec_int_on_nn_module``, as torch's hint
    spells it) to ``value`` after the module's imports, spelling torch as the module imports
    it; ``source`` itself when a module-level statement sets it already (to any value: the
    user's choice stands)."""
    module = parse_source(source)
    spelling = torch_spelling(module) or "torch"
    attribute = option.removeprefix("torch.")
    target = f"{spelling}.{attribute}"
    if target in _assigned_names(module):
        return source
    body = list(module.body)
    end = header_end(body)
    # A blank line sets it apart from the imports above it, as a statement of its own.
    body.insert(end, cst.parse_statement(f"{target} = {value}\n").with_changes(
        leading_lines=[cst.EmptyLine()] if end else []))
    following = body[end + 1] if end + 1 < len(body) else None
    if isinstance(following, (cst.FunctionDef, cst.ClassDef)) and not following.leading_lines:
        body[end + 1] = following.with_changes(leading_lines=[cst.EmptyLine(), cst.EmptyLine()])
    return module.with_changes(body=body).code


# FX506 on torch.tensor(list(range(n))): torch.arange(n), whose size stays symbolic

#: Keywords ``torch.tensor`` and ``torch.arange`` both take, meaning the same.
ARANGE_KEYWORDS = frozenset({"dtype", "device", "requires_grad"})


def range_arguments(node: cst.BaseExpression) -> Sequence[cst.Arg] | None:
    """The arguments of ``range(...)`` in ``list(range(...))`` or ``range(...)``: positional,
    one to three; else None."""
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and \
            node.func.value == "list" and len(node.args) == 1 and \
            node.args[0].keyword is None and not node.args[0].star:
        node = node.args[0].value
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Name)
            and node.func.value == "range" and 1 <= len(node.args) <= 3):
        return None
    if any(arg.keyword is not None or arg.star for arg in node.args):
        return None
    return node.args


class _RangeTensorToArange(EditAtPosition):
    def leave_Call(self, original_node: cst.Call, updated_node: cst.Call) -> cst.BaseExpression:
        if self.changed or not self.starts_here(original_node):
            return updated_node
        spelling = torch_spelling(self.module)
        if spelling is None or dotted_name(original_node.func) != f"{spelling}.tensor" or \
                not original_node.args or original_node.args[0].keyword is not None or \
                original_node.args[0].star:
            return updated_node
        positions = range_arguments(original_node.args[0].value)
        keywords = original_node.args[1:]
        if positions is None or any(arg.keyword is None or arg.star or
                                    arg.keyword.value not in ARANGE_KEYWORDS
                                    for arg in keywords):
            return updated_node
        self.changed = True
        arguments = [*(arg.with_changes(comma=cst.MaybeSentinel.DEFAULT) for arg in positions),
                     *keywords]
        last = arguments[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return updated_node.with_changes(
            func=cst.parse_expression(f"{spelling}.arange"), args=[*arguments[:-1], last])


def range_tensor_to_arange(source: str, line: int, column: int) -> str:
    """Replace ``torch.tensor(list(range(a, b, c)), dtype=...)`` starting at ``line``/
    ``column`` with ``torch.arange(a, b, c, dtype=...)``: the same values (of an empty range
    without ``dtype``, int64 rather than float32), made by an operation torch.compile keeps
    with a symbolic size, where the list makes it specialise the size."""
    return edit_at(source, _RangeTensorToArange, line, column)
