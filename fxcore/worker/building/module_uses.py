"""Constructor values for the parameters that hold modules by how the code uses them, where
neither name nor annotation says so (``layers``, ``blocks``: the name table gives a count):

- one ``__init__`` wraps in a module container or a sequence (``nn.ModuleList(layers)``,
  ``nn.Sequential(*blocks)``, ``list(stages)``): a list of modules;
- one ``forward`` indexes or iterates (``for layer in self.layers``, ``self.blocks[i](x)``,
  ``len(self.blocks)``) and takes as no number, where the guess cannot be indexed or
  iterated: a list of modules.

Not where a loop unpacks its items (``for f, g in self.blocks``): those are pairs.

The modules are small, real and shape preserving (``annotation_values.module_values``: a
``Linear`` of the width beside the parameter, guessed or its default, a convolution of the
channels), two of them in
an ``nn.ModuleList`` so that their weights are the instance's own. Read with ``ast``;
nothing is called.
"""

from __future__ import annotations

import ast
import functools
import inspect
from typing import Any

import torch

from fxcore.worker.building.annotation_values import made, made_source, module_values
from fxcore.worker.building.called_checks import own_init
from fxcore.worker.building.forward_uses import fits, forward_trees, parameter_uses
from fxcore.worker.source.function_trees import function_tree

#: The callables that make a container of modules or a sequence of what they are given.
WRAPPERS = frozenset({"ModuleList", "Sequential", "list", "tuple"})
#: How many modules the list holds.
MODULES = 2


@functools.lru_cache(maxsize=64)
def wrapped_parameters(cls: type) -> frozenset[str]:
    """The parameters ``__init__`` passes to a module container or sequence as its items
    (``nn.ModuleList(layers)``, ``nn.Sequential(*blocks)``)."""
    found = own_init(cls)
    tree = function_tree(found[0]) if found is not None else None
    if tree is None or not tree.body or not isinstance(tree.body[0], ast.FunctionDef):
        return frozenset()
    arguments = tree.body[0].args
    names = {a.arg for a in [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]}
    wrapped: set[str] = set()
    for node in ast.walk(tree.body[0]):
        if not isinstance(node, ast.Call) or len(node.args) != 1 or node.keywords:
            continue
        callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(
            node.func, "id", None)
        item = node.args[0].value if isinstance(node.args[0], ast.Starred) else node.args[0]
        if callee in WRAPPERS and isinstance(item, ast.Name) and item.id in names:
            wrapped.add(item.id)
    return frozenset(wrapped)


def module_list_values(cls: type, values: dict[str, Any]) -> dict[str, list[Any]]:
    """Parameter -> a list of modules first, then its guess, for the parameters whose use
    says they hold modules and whose guess in ``values`` does not fit that use."""
    uses = parameter_uses(cls)
    wrapped = wrapped_parameters(cls)
    unpacked = _unpacked(cls)
    fitted: dict[str, list[Any]] = {}
    for name, guess in values.items():
        use = uses.get(name)
        if name in unpacked or (use is not None and use[0] in unpacked):
            continue  # items unpacked (``for f, g in self.blocks``): pairs, not modules
        sequenced = use is not None and (use[1].indexed or use[1].iterated) \
            and not use[1].number and not fits(guess, use[1])
        if (name in wrapped and not _holds_modules(guess)) or sequenced:
            fitted[name] = [_module_list({**_defaults(cls), **values, name: None}), guess]
    return fitted


def _unpacked(cls: type) -> set[str]:
    """The names (a parameter in ``__init__``, an attribute in ``forward``) whose items a loop
    or comprehension unpacks (``for f, g in blocks``, ``for f, g in self.blocks``)."""
    found = own_init(cls)
    trees = [function_tree(found[0]) if found is not None else None,
             *forward_trees(cls)]
    names: set[str] = set()
    for tree in trees:
        for node in ast.walk(tree) if tree is not None else ():
            if isinstance(node, (ast.For, ast.comprehension)) \
                    and isinstance(node.target, ast.Tuple):
                iterated = node.iter
                if isinstance(iterated, ast.Name):
                    names.add(iterated.id)
                elif isinstance(iterated, ast.Attribute) and isinstance(iterated.value, ast.Name) \
                        and iterated.value.id == "self":
                    names.add(iterated.attr)
    return names


def _defaults(cls: type) -> dict[str, Any]:
    """The constructor's defaults: a width the modules must keep may be one (``dim=16``)."""
    try:
        parameters = inspect.signature(cls).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in parameters if p.default is not inspect.Parameter.empty}


def _holds_modules(value: Any) -> bool:
    return isinstance(value, (list, tuple, torch.nn.ModuleList)) and bool(value) \
        and all(isinstance(item, torch.nn.Module) for item in value)


def _module_list(values: dict[str, Any]) -> Any:
    """An ``nn.ModuleList`` of ``MODULES`` shape-preserving modules, its source kept."""
    first = module_values(values)[0]
    source = made_source(first) or "__import__('torch').nn.Identity()"
    return made(f"__import__('torch').nn.ModuleList([{', '.join([source] * MODULES)}])")
