"""The containers of tensors (lists, tuples, dicts) whose length the loop of calls varies, and
their longer versions. Dynamo guards a container argument's length (``len(xs) == 3``) and
never makes it dynamic, so a ``forward`` that takes a varying number of tensors (images of
several sizes, feature maps, a sequence of chunks) compiles again for each new length.

Only a container that ``forward``'s code takes whole is varied: one it iterates, slices, asks
the length of or passes on. One it reads only at fixed places (``xs[0]``, ``feats["p3"]``,
``xs[-1]``, ``a, b = xs``) is of one length by construction, and a longer one is not a call
the code is written for."""

from __future__ import annotations

import ast
import inspect
import textwrap
from typing import Any

import torch

from fxcore.worker.source.locate import RawPosition


def varied(model: torch.nn.Module, inputs: dict[str, Any]) -> dict[str, list[RawPosition]]:
    """The names of ``inputs`` that are non-empty containers of tensors and that ``forward``
    takes whole, each with the place of its first such use (where a diagnostic goes when
    dynamo's guard names no line: a dict's is checked as the frame is entered); none where
    ``forward``'s source cannot be read."""
    containers = [name for name, value in inputs.items() if _tensors_of(value)]
    if not containers:
        return {}
    forward = type(model).forward
    try:
        lines, first = inspect.getsourcelines(forward)
        function = ast.parse(textwrap.dedent("".join(lines))).body[0]
        filename = inspect.getsourcefile(forward)
    except (OSError, TypeError, SyntaxError, IndexError):
        return {}
    if filename is None:
        return {}
    found = {}
    for name in containers:
        use = _first_whole_use(function, name)
        if use is not None:
            found[name] = [RawPosition(filename, forward.__name__, first + use.lineno - 1,
                                       None, None, None)]
    return found


def longer(container: Any) -> list[Any]:
    """``container`` one, two and three items longer: its last tensor repeated (a copy, so that
    no two items are the same tensor, which dynamo would guard too), a dict's under new keys."""
    last = _tensors_of(container)[-1]
    if isinstance(container, dict):
        return [{**container, **{f"_fx_lsp_extra_{index}": last.clone()
                                 for index in range(extra)}} for extra in (1, 2, 3)]
    return [type(container)([*container, *(last.clone() for _ in range(extra))])
            for extra in (1, 2, 3)]


def _tensors_of(value: Any) -> list[torch.Tensor]:
    items = list(value.values()) if isinstance(value, dict) else \
        list(value) if isinstance(value, (list, tuple)) else []
    return items if items and all(isinstance(item, torch.Tensor) for item in items) else []


def _constant(node: ast.AST) -> bool:
    """A constant place: ``0``, ``"p3"``, ``-1``."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        node = node.operand
    return isinstance(node, ast.Constant)


def _first_whole_use(function: ast.AST, name: str) -> ast.Name | None:
    """The first use of ``name`` in ``function`` other than a read at a constant place
    (``xs[0]``, ``xs["p3"]``, ``xs[-1]``) or an unpacking (``a, b = xs``)."""
    parents = {child: node for node in ast.walk(function) for child in ast.iter_child_nodes(node)}
    names = sorted((node for node in ast.walk(function) if isinstance(node, ast.Name)),
                   key=lambda node: (node.lineno, node.col_offset))
    for node in names:
        if not (isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load)):
            continue
        parent = parents.get(node)
        if (isinstance(parent, ast.Subscript) and parent.value is node
                and _constant(parent.slice)):
            continue
        if isinstance(parent, ast.Assign) and parent.value is node and all(
                isinstance(target, (ast.Tuple, ast.List)) for target in parent.targets):
            continue
        return node
    return None
