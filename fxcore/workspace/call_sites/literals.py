"""What makes a constructor call worth reading: every argument a literal, or a call of a
class with such arguments (``GPT(GPTConfig(n_layer=2))``)."""

from __future__ import annotations

import ast


def is_literal_call_argument(node: ast.expr) -> bool:
    """A literal, or a call of a CapWords name whose arguments are all such."""
    if isinstance(node, ast.Call):
        return called_class_name(node) is not None and has_literal_arguments(node)
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def has_literal_arguments(call: ast.Call) -> bool:
    """Every argument of ``call`` a literal or such a call, none unpacked."""
    return all(is_literal_call_argument(argument) for argument in call.args) and all(
        keyword.arg is not None and is_literal_call_argument(keyword.value)
        for keyword in call.keywords)


def called_class_name(call: ast.Call) -> str | None:
    function = call.func
    name = function.id if isinstance(function, ast.Name) else (
        function.attr if isinstance(function, ast.Attribute) else None)
    return name if name and name[:1].isupper() else None


def called_constructor(call: ast.Call) -> tuple[str, str | None] | None:
    """(class name, None) for ``Class(...)`` or ``module.Class(...)``; (class name, method)
    for ``Class.method(...)``, a CapWords name's lowercase attribute called (an alternate
    constructor such as ``EfficientNet.from_name``; whether it is one is the worker's to
    check); None for any other call."""
    name = called_class_name(call)
    if name is not None:
        return name, None
    function = call.func
    if isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name) \
            and function.value.id[:1].isupper() and function.attr[:1].islower():
        return function.value.id, function.attr
    return None
