"""What makes a constructor call worth reading: every argument a literal, or a call of a
class with such arguments (``GPT(GPTConfig(n_layer=2))``)."""

from __future__ import annotations

import ast


def is_literal_call_argument(node: ast.expr) -> bool:
    """A literal, or a call of a CapWords name whose arguments are all such."""
    if isinstance(node, ast.Call):
        return called_class_name(node) is not None and all(
            is_literal_call_argument(argument) for argument in node.args
        ) and all(keyword.arg is not None and is_literal_call_argument(keyword.value)
                  for keyword in node.keywords)
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def called_class_name(call: ast.Call) -> str | None:
    function = call.func
    name = function.id if isinstance(function, ast.Name) else (
        function.attr if isinstance(function, ast.Attribute) else None)
    return name if name and name[:1].isupper() else None
