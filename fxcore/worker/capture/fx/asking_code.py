"""Whether Python itself asks a Proxy for a number or a length, or torch's C code does.

Both reach the same dunder (``__len__``, ``__index__``, ...). Where Python asks (``len(x)``,
``int(x)``, ``range(n)``, a list subscript) plain torch.fx fails, and the recovering tracer
records the failure and stands a value in. Where torch's C code asks (its argument parser,
tensor indexing), a plain Proxy's error is part of how torch goes on: it clears it and
dispatches to ``__torch_function__``. The tracer must then fail exactly as a plain Proxy
does, so it tells the two apart by the expression the user's frame is executing.
"""

from __future__ import annotations

import ast
import types
from typing import Any

from fxcore.worker.source.locate import SourceIndex, instruction_position
from fxcore.worker.source.user_objects import user_attribute

#: Python's own modules, whose callables convert their arguments to numbers or ask their
#: length. ``operator.index`` is ``_operator``'s: ``ModuleList`` and ``Sequential`` convert
#: an index with it, as a list subscript does in C, so a traced index is the same conversion
#: (FX004) in either.
_PYTHON_MODULES = frozenset({"builtins", "math", "cmath", "operator", "_operator"})


def expression_at(frame: Any, sources: SourceIndex) -> ast.Call | ast.Subscript | None:
    """The call or subscript ``frame`` is executing; None where the source or the
    instruction's columns are unknown, or it is neither."""
    if frame is None:
        return None
    tree = sources.tree(frame.f_code.co_filename)
    position = instruction_position(frame.f_code, frame.f_lasti, frame.f_lineno)
    if tree is None or position.column is None:
        return None
    for node in ast.walk(tree):
        if (
            isinstance(node, (ast.Call, ast.Subscript))
            and node.lineno == position.line
            and node.col_offset == position.column
            and node.end_lineno == position.end_line
            and node.end_col_offset == position.end_column
        ):
            return node
    return None


def calls_python_function(expression: ast.expr | None, frame: Any) -> bool:
    """True when ``expression``, which ``frame`` is executing, is a call of a builtin,
    ``math`` or ``operator`` function (``len(x)``, ``int(x)``, ``range(n)``,
    ``math.sqrt(x)``, ``operator.index(i)``)."""
    return isinstance(expression, ast.Call) and \
        _is_python_function(_resolve_callee(expression.func, frame))


def _resolve_callee(expression: ast.expr, frame: Any) -> Any:
    """The object a call's callee names, found without running anything: a name in the
    frame's scopes, or attributes of a module (``math.floor``)."""
    if isinstance(expression, ast.Name):
        for scope in (frame.f_locals, frame.f_globals, frame.f_builtins):
            if expression.id in scope:
                return scope[expression.id]
        return None
    if isinstance(expression, ast.Attribute):
        base = _resolve_callee(expression.value, frame)
        if isinstance(base, types.ModuleType):
            return user_attribute(base, expression.attr)
    return None


def _is_python_function(callee: Any) -> bool:
    return callee is not None and getattr(callee, "__module__", None) in _PYTHON_MODULES
