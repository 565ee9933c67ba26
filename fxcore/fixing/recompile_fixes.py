"""Source edits behind the quick fixes of torch.compile's recompilations (FX505-FX507, planned
by ``recompile_plan``), with libcst so that formatting and comments survive; idempotent.

- ``set_config_option``: the ``torch._dynamo.config`` / ``torch.compiler.config`` option a
  recompilation's hint from torch names, set at module scope after the imports, where it holds
  before any ``torch.compile`` of the file's classes runs (``import torch`` is the fix's
  ``import_edit``, as for ``pt2_fixes``).
"""

from __future__ import annotations

import libcst as cst

from fxcore.fixing.libcst_edits import dotted_name, header_end, parse_source
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
