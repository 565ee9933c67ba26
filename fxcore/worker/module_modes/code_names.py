"""What Python code names, read from its code objects without running it: the functions of a
class attribute, the attribute and global names a function reads, and the functions outside
torch those names are (``judging``' readers of ``training``, ``call_reach``'s functions a
call can run)."""

from __future__ import annotations

import types
from collections.abc import Iterator
from typing import Any


def functions(value: Any) -> Iterator[Any]:
    """The Python functions of a class attribute: a function (and the one it wraps), a static
    or class method's, a property's accessors."""
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    if isinstance(value, property):
        for accessor in (value.fget, value.fset, value.fdel):
            yield from functions(accessor)
        return
    # Anything with Python code (a Cython function has its own ``__code__`` too).
    if isinstance(getattr(value, "__code__", None), types.CodeType):
        yield value
    wrapped = getattr(value, "__wrapped__", None)
    if wrapped is not None and wrapped is not value:
        yield from functions(wrapped)


def names_read(code: types.CodeType) -> set[str]:
    """The attribute and global names ``code`` reads, with those of the functions, lambdas and
    comprehensions nested in it."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= names_read(const)
    return names


def outside_torch(value: Any) -> bool:
    module = getattr(value, "__module__", None) or ""
    return isinstance(value, types.FunctionType) and module.split(".")[0] != "torch"


def called(function: Any, names: set[str]) -> Iterator[types.FunctionType]:
    """The functions outside torch that ``function`` may call: globals it names (``helper``)
    and functions of modules it names (``utils.helper``, both names read)."""
    for name in names:
        value = getattr(function, "__globals__", {}).get(name)
        if isinstance(value, types.ModuleType):
            members = vars(value)
            yield from (members[other] for other in names
                        if outside_torch(members.get(other)))
        elif outside_torch(value):
            yield value
