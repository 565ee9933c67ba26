"""Whether a function's reads of ``training`` only pick tensor computations, read from its
source without running it: then compile mode's loop of calls (``recompile_loop``) finds the
same recompilations in train and eval mode (``judging.loop_can_differ``).

A class compiled in both ``nn.Module`` modes (``module_modes``) runs the loop in the first mode
alone where every read of ``training`` outside torch's own layers only picks tensor
computations: the test of an ``if`` or a conditional expression whose branches assign local
names from torch functions, tensor methods, operators and torch's own layers
(``if self.training: x = F.dropout(x)``, ``x = self.drop(x) if self.training else x``), or an
argument of a torch function (``F.dropout(x, self.p, self.training)``). Dynamo guards on
``training`` and traces the other branch, but what recompiles across calls (an attribute
changed on each call, a size read into Python, a number argument, a container's length) is
then outside those branches, the same in both modes.

Anything else counts as a difference, and the loop runs again in the second mode: a branch
that stores an attribute (``if self.training: self.step += 1``), reads a size (``.shape``,
``len``), calls code of the workspace or a submodule that is not one of torch's layers, returns
early; a read of ``training`` kept in a variable or handed to the workspace's own code; a
function whose source cannot be read.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterable
from typing import Any

import torch

from fxcore.worker.source.function_trees import function_tree

#: Tensor attributes that read a size or a value into Python: code that does so in one mode
#: only can specialise (and recompile) in that mode only.
_SIZE_READS = frozenset({"shape", "size", "dim", "ndim", "ndimension", "numel", "nelement",
                         "item", "tolist", "stride", "storage_offset", "data_ptr", "__len__"})
#: Expressions whose parts are checked one by one (everything else counts as a difference).
_PLAIN = (ast.Constant, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Tuple,
          ast.List, ast.Subscript, ast.Slice, ast.Starred, ast.keyword, ast.expr_context,
          ast.operator, ast.unaryop, ast.boolop, ast.cmpop, ast.Name, ast.Attribute, ast.Call)


def picks_tensor_computations(function: Any, instances: list[torch.nn.Module]) -> bool:
    """Whether every read of ``training`` in ``function`` (a method of the class of
    ``instances``, or a function it calls) only picks tensor computations (see the module's
    docstring)."""
    tree = function_tree(function)
    if tree is None:
        return False
    reading = _Reading(getattr(function, "__globals__", {}), instances)
    parents = {child: parent for parent in ast.walk(tree) for child in ast.iter_child_nodes(parent)}
    return all(reading.picks_tensors(node, parents) for node in ast.walk(tree)
               if isinstance(node, ast.Attribute | ast.Name)
               and "training" in (getattr(node, "attr", None), getattr(node, "id", None)))


class _Reading:
    """One function's code: what its names are (its globals, ``self``'s attributes on the
    instances of the class it belongs to)."""

    def __init__(self, names: dict[str, Any], instances: list[torch.nn.Module]) -> None:
        self.names = names
        self.instances = instances

    def picks_tensors(self, read: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
        """Whether this read of ``training`` only picks tensor computations."""
        test = read
        while isinstance(parents.get(test), ast.BoolOp | ast.UnaryOp | ast.Compare):
            test = parents[test]
        above = parents.get(test)
        if isinstance(above, ast.keyword):
            test, above = above, parents.get(above)
        if isinstance(above, ast.If) and above.test is test:
            return self.expression(test) and all(
                self.statement(each) for each in (*above.body, *above.orelse))
        if isinstance(above, ast.IfExp) and above.test is test:
            return _kept_locally(above, parents) and all(
                self.expression(each) for each in (test, above.body, above.orelse))
        if isinstance(above, ast.Call) and test is not above.func:
            return _kept_locally(above, parents) and self.torch_callee(
                above.func) and self.expression(test)
        return False

    def statement(self, node: ast.stmt) -> bool:
        """Whether ``node`` only assigns local names from tensor computations."""
        if isinstance(node, ast.Pass):
            return True
        if isinstance(node, ast.Expr):
            return self.expression(node.value)
        if isinstance(node, ast.If):
            return self.expression(node.test) and all(
                self.statement(each) for each in (*node.body, *node.orelse))
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            return _local_names(targets) and (node.value is None or self.expression(node.value))
        return False

    def expression(self, node: ast.AST) -> bool:
        for part in ast.walk(node):
            if not isinstance(part, _PLAIN):
                return False
            if isinstance(part, ast.Attribute) and part.attr in _SIZE_READS:
                return False
            if isinstance(part, ast.Attribute) and _is_self(part.value) and not self.tensors(
                    part.attr):
                return False
            if isinstance(part, ast.Call) and not (self.torch_callee(part.func)
                                                   or self.tensor_method(part.func)):
                return False
        return True

    def tensors(self, attribute: str) -> bool:
        """Whether ``self.<attribute>`` is ``training``, a tensor or one of torch's layers on
        every instance."""
        return attribute == "training" or all(
            isinstance(value := getattr(instance, attribute, None), torch.Tensor)
            or (isinstance(value, torch.nn.Module) and _torch_layer(type(value)))
            for instance in self.instances)

    def torch_callee(self, func: ast.AST) -> bool:
        """Whether ``func`` names torch's own code: a function of a torch module
        (``F.dropout``, ``torch.rand_like``) or a torch layer held by ``self``."""
        chain = []
        while isinstance(func, ast.Attribute):
            chain.append(func.attr)
            func = func.value
        if _is_self(func):
            return len(chain) == 1 and self.tensors(chain[0])
        if not isinstance(func, ast.Name):
            return False
        value = self.names.get(func.id)
        module = value.__name__ if inspect.ismodule(value) else getattr(value, "__module__", "")
        return (module or "").split(".")[0] == "torch"

    def tensor_method(self, func: ast.AST) -> bool:
        """Whether ``func`` is a tensor method called on a local value (``x.masked_fill``)."""
        return (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name)
                and func.value.id not in self.names and not _is_self(func.value)
                and hasattr(torch.Tensor, func.attr) and func.attr not in _SIZE_READS)


def _is_self(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _kept_locally(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """Whether the statement ``node`` is part of keeps what it computes in local names, or
    returns it."""
    while not isinstance(node, ast.stmt) and node in parents:
        node = parents[node]
    if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
        return _local_names(node.targets if isinstance(node, ast.Assign) else [node.target])
    return isinstance(node, ast.Return | ast.Expr)


def _local_names(targets: Iterable[ast.AST]) -> bool:
    return all(isinstance(target, ast.Name) or (
        isinstance(target, ast.Tuple | ast.List) and _local_names(target.elts))
        for target in targets)


def _torch_layer(cls: type) -> bool:
    return cls.__module__.startswith("torch.nn.modules.")
