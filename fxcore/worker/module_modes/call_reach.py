"""The functions a call of a model can run, found from the names code reads, without running
anything: compile mode's loop of calls (``recompile_loop``) only calls the compiled model, so a
method that reads ``training`` but that nothing a call runs can name (a ``predict`` that
switches the model to eval mode, a ``train`` override) cannot change what the loop recompiles
(``judging.loop_can_differ``).

A call starts at every special method (``__call__``, ``__getattr__``, ``forward``'s callers in
``nn.Module``) and ``forward`` of each class of the module tree, and at the hooks registered on
its modules or globally. From there, a function reaches each method of the tree's classes (torch's
own included) and each function held on an instance whose name its code reads, as an attribute,
a global or a string (``getattr(self, "name")``; a string a module holds counts as read), and
the functions outside torch it calls
(``judging.readers``' rule); each of those reaches further the same way. What is named
counts as called, whether or not that line runs: the answer errs towards "can run".
"""

from __future__ import annotations

import types
from collections.abc import Iterable, Iterator
from typing import Any

import torch

from fxcore.worker.module_modes.code_names import called, functions, names_read

#: Special methods a call does not run.
_NOT_CALLED = frozenset({"__init__", "__new__", "__init_subclass__", "__class_getitem__"})


def reached_functions(model: torch.nn.Module) -> set[Any]:
    """The functions a call of ``model`` can run (see the module's docstring)."""
    by_name: dict[str, list[Any]] = {}
    for cls in {type(module) for module in model.modules()}:
        for klass in cls.__mro__:
            if klass is object:
                continue
            for name, value in vars(klass).items():
                by_name.setdefault(name, []).extend(functions(value))
    held = list(_held_callables(model))
    # A name kept as a string (``self.entry = "predict"``, ``getattr(self, self.entry)``).
    kept = {value for module in model.modules() for value in vars(module).values()
            if isinstance(value, str)}
    for name, value in held:
        if name is not None:
            by_name.setdefault(name, []).extend(_plain_functions(value))
    pending = [function for name, found in by_name.items() for function in found
               if name == "forward" or (name.startswith("__") and name.endswith("__")
                                        and name not in _NOT_CALLED)]
    pending += [function for name, value in held if name is None
                for function in _plain_functions(value)]
    pending += [function for name in kept for function in by_name.get(name, ())]
    reached: set[Any] = set()
    while pending:
        function = pending.pop()
        if function in reached:
            continue
        reached.add(function)
        code = function.__code__
        read = names_read(code) | set(_strings(code))
        pending.extend(found for name in read for found in by_name.get(name, ()))
        pending.extend(called(function, read))
    return reached


def _plain_functions(value: Any) -> Iterator[Any]:
    """The Python functions of a held callable: a function's, a bound method's, a
    ``functools.partial``'s."""
    value = getattr(value, "func", value)  # a partial's function
    yield from functions(getattr(value, "__func__", value))


def _held_callables(model: torch.nn.Module) -> Iterator[tuple[str | None, Any]]:
    """Callables the modules hold: each instance attribute that is one, by its name (a
    ``self.act = self.gelu`` that forward calls as ``self.act``), and the hooks a call runs,
    registered on a module or globally, without a name (a call runs them all)."""
    for module in model.modules():
        for name, value in vars(module).items():
            if callable(value) and not isinstance(value, torch.nn.Module | type):
                yield name, value
            elif name.endswith("hooks") and isinstance(value, dict):
                yield from ((None, hook) for hook in value.values() if callable(hook))
    # Where torch keeps the hooks of every module's call (``register_module_forward_hook``).
    for name, value in vars(torch.nn.modules.module).items():
        if name.startswith("_global_") and name.endswith("hooks") and isinstance(value, dict):
            yield from ((None, hook) for hook in value.values() if callable(hook))


def _strings(code: types.CodeType) -> Iterable[str]:
    """The string constants of ``code`` and of the code nested in it."""
    for const in code.co_consts:
        if isinstance(const, str):
            yield const
        elif isinstance(const, types.CodeType):
            yield from _strings(const)
