"""The calls of a class in the workspace's tests and examples, read with ``ast`` (test files
are parsed, never imported or run): ``model = Net(...)`` then ``model(torch.randn(2, 3, 32,
32))``, or ``Net(...)(x)`` with ``x = torch.randn(...)`` before it. Each tensor argument is a
tensor factory (``torch.randn``, ``rand``, ``zeros``, ``ones``, ``empty``, ``full``,
``randint``) whose sizes are numbers or names the file sets to numbers (``batch_size = 4``), and
whose ``dtype=torch.long`` (or ``randint``'s integers) gives its dtype; a dict or list literal
of them is a container. A call with any other argument says nothing.

Which files are read, how, and how much of them: ``calling_files``."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import Any

from fxcore.model.tensor_spec import DTYPES, TensorSpec
from fxcore.worker.inputs.given.calling_files import harvest

_FACTORIES = frozenset({"randn", "rand", "zeros", "ones", "empty", "full", "randint"})
_DTYPE_NAMES = {"long": "int64", "int": "int32", "float": "float32", "double": "float64",
                "half": "float16", "bool": "bool"}


def called_inputs(class_name: str, root: str) -> Iterator[tuple[Any, str]]:
    """The arguments of each call of an instance of ``class_name`` in the workspace's tests
    and examples (a list of positional ones, or a dict of keyword ones; tensors as
    ``TensorSpec``), each with the file and line it is at, one by one: files are read only
    as far as the caller takes calls."""
    for path, calls in harvest(root).calls_naming(
            class_name, lambda tree: _calls_in_file(tree, class_name)):
        for values, line in calls:
            yield values, f"{path}:{line}"


def _calls_in_file(tree: ast.Module, class_name: str) -> list[tuple[Any, int]]:
    numbers = _numbers(tree)
    return [call for function in ast.walk(tree)
            if isinstance(function, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef))
            for call in _calls(function, class_name, numbers)]


def _numbers(tree: ast.AST) -> dict[str, int]:
    """The names the file sets to an integer (``batch_size = 4``)."""
    return {node.targets[0].id: node.value.value for node in ast.walk(tree)
            if isinstance(node, ast.Assign) and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Constant)
            and type(node.value.value) is int}


def _own_statements(function: ast.AST) -> list[ast.AST]:
    """The nodes of ``function`` outside the functions and classes it defines."""
    found: list[ast.AST] = []
    pending = list(ast.iter_child_nodes(function))
    while pending:
        node = pending.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        found.append(node)
        pending.extend(ast.iter_child_nodes(node))
    return found


def _calls(function: ast.AST, class_name: str,
           numbers: dict[str, int]) -> list[tuple[Any, int]]:
    nodes = _own_statements(function)
    instances: set[str] = set()
    values: dict[str, Any] = {}
    for node in sorted((node for node in nodes if isinstance(node, ast.Assign)),
                       key=lambda node: node.lineno):
        target = node.targets[0] if len(node.targets) == 1 else None
        if not isinstance(target, ast.Name):
            continue
        if _makes(node.value, class_name):
            instances.add(target.id)
        else:
            value = _value(node.value, numbers, values)
            if value is not None:
                values[target.id] = value
    found = []
    for node in nodes:
        if not isinstance(node, ast.Call) or not (
                _makes(node.func, class_name)
                or (isinstance(node.func, ast.Name) and node.func.id in instances)):
            continue
        positional = [_value(argument, numbers, values) for argument in node.args]
        keywords = {keyword.arg: _value(keyword.value, numbers, values)
                    for keyword in node.keywords if keyword.arg is not None}
        if None in positional or None in keywords.values() or (positional and keywords) \
                or len(keywords) != len(node.keywords) or not (positional or keywords):
            continue
        found.append((positional or keywords, node.lineno))
    return found


def _makes(node: ast.AST, class_name: str) -> bool:
    """Whether ``node`` is ``ClassName(...)`` or ``module.ClassName(...)``."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    return (isinstance(func, ast.Name) and func.id == class_name) \
        or (isinstance(func, ast.Attribute) and func.attr == class_name)


def _value(node: ast.AST, numbers: dict[str, int], values: dict[str, Any]) -> Any:
    """A tensor factory's spec, a dict or list literal of them, or a name set to one; None
    for anything else."""
    if isinstance(node, ast.Name):
        return values.get(node.id)
    if isinstance(node, ast.Dict):
        items = {key.value: _value(value, numbers, values)
                 for key, value in zip(node.keys, node.values, strict=True)
                 if isinstance(key, ast.Constant) and isinstance(key.value, str)}
        return items if items and len(items) == len(node.keys) \
            and None not in items.values() else None
    if isinstance(node, (ast.List, ast.Tuple)):
        elements = [_value(element, numbers, values) for element in node.elts]
        return elements if elements and None not in elements else None
    return _factory(node, numbers)


def _factory(node: ast.AST, numbers: dict[str, int]) -> TensorSpec | None:
    """``torch.randn(2, 3)``, ``torch.randint(0, 10, (2, 8))``, ``torch.zeros((2, 3),
    dtype=torch.long)``: the tensor's spec."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.value.id == "torch"
            and node.func.attr in _FACTORIES):
        return None
    arguments = list(node.args)
    if node.func.attr == "randint":
        arguments = arguments[-1:]  # (low, high, size): the size
    elif node.func.attr == "full":
        arguments = arguments[:1]  # (size, fill value)
    size = [keyword.value for keyword in node.keywords if keyword.arg == "size"]
    sizes = size or arguments
    if len(sizes) == 1 and isinstance(sizes[0], (ast.Tuple, ast.List)):
        sizes = list(sizes[0].elts)
    shape = [_size(size, numbers) for size in sizes]
    if not shape or None in shape:
        return None
    dtype = "int64" if node.func.attr == "randint" else "float32"
    for keyword in node.keywords:
        if keyword.arg == "dtype" and isinstance(keyword.value, ast.Attribute):
            named = _DTYPE_NAMES.get(keyword.value.attr, keyword.value.attr)
            if named not in DTYPES:
                return None
            dtype = named
    return TensorSpec(dtype, tuple(shape))  # type: ignore[arg-type]


def _size(node: ast.AST, numbers: dict[str, int]) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int and node.value > 0:
        return node.value
    if isinstance(node, ast.Name) and numbers.get(node.id, 0) > 0:
        return numbers[node.id]
    return None
