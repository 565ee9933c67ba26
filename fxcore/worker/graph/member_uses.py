"""Which of a module's members ``forward`` uses, beyond the ones one capture ran: the same
object registered under several names (``self.head = self.cls_head`` uses ``cls_head`` when the
graph says ``head``), and members that ``forward``'s own code, or a method of the class it calls,
names on a path this instance did not take (a head picked by a flag or an argument is used by
``forward``, only not for this one instance)."""

from __future__ import annotations

import ast
from collections.abc import Iterable

import torch

from fxcore.worker.source.function_trees import function_tree


def aliased_names(model: torch.nn.Module, used: Iterable[str]) -> set[str]:
    """Every name under which an object named in ``used`` (a submodule, a parameter, or one
    under them) is registered in ``model``, itself included."""
    names_of: dict[int, list[str]] = {}
    for name, module in model.named_modules(remove_duplicate=False):
        names_of.setdefault(id(module), []).append(name)
    for name, parameter in model.named_parameters(remove_duplicate=False):
        names_of.setdefault(id(parameter), []).append(name)
    objects = {name: id_ for id_, names in names_of.items() for name in names}
    result = set(used)
    for name in used:
        if name in objects:
            result.update(names_of[objects[name]])
    return result


def names_forward_reads(model: torch.nn.Module) -> set[str]:
    """Attribute names read as ``self.<name>`` by ``forward`` and by the methods of the class
    that it calls as ``self.<method>(...)``, transitively; empty where the source is not found."""
    cls, names, seen = type(model), set[str](), set[str]()
    pending = ["forward"]
    while pending:
        method = pending.pop()
        if method in seen:
            continue
        seen.add(method)
        function = getattr(cls, method, None)
        # A property's getter is code forward runs when it reads the property.
        tree = function_tree(function.fget if isinstance(function, property) else function)
        for node in ast.walk(tree) if tree is not None else ():
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.value.id == "self" and isinstance(node.ctx, ast.Load)):
                names.add(node.attr)
                if callable(getattr(cls, node.attr, None)) or isinstance(
                        getattr(cls, node.attr, None), property):
                    pending.append(node.attr)
    return names
