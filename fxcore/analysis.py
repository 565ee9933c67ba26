"""What a finished capture tells beyond its graph: failures that may follow from recovering
from earlier ones, failures to move onto a decorated ``forward``, the graph nodes of each
source line, and members that ``forward`` never used (FX200)."""

from __future__ import annotations

import ast
import os
from typing import TYPE_CHECKING, Any

import torch
from torch import fx

from fxcore.discovery import ClassSource
from fxcore.locate import SourceIndex
from fxcore.results import CODES, Failure, GraphNode, GraphNodeInfo, Hint

if TYPE_CHECKING:
    from fxcore.worker.capture.base import CaptureRecord


def mark_consequences(failures: list[Failure], sources: SourceIndex) -> None:
    """Flag failures that run only because recovery took a branch or a loop body.

    Recovery from a control-flow failure takes one branch; from an iteration failure it
    runs the loop body once with a stand-in element. A later failure inside that branch or
    body may disappear once the first is fixed, so its message says so.
    """
    for index, failure in enumerate(failures):
        if failure.kind not in {"control-flow", "iteration"}:
            continue
        tree = sources.tree(failure.path)
        if tree is None:
            continue
        body_lines: tuple[int, int] | None = None
        for node in ast.walk(tree):
            if isinstance(node, (ast.If, ast.While, ast.For, ast.AsyncFor)):
                test = node.test if isinstance(node, (ast.If, ast.While)) else node.iter
                if test.lineno == failure.line:
                    body_lines = (node.body[0].lineno, node.end_lineno or node.lineno)
                    break
        if body_lines is None:
            continue
        for later in failures[index + 1:]:
            if later.path == failure.path and body_lines[0] <= later.line <= body_lines[1] \
                    and not later.message.startswith("(May be a consequence"):
                later.possible_consequence = True
                later.message = (
                    f"(May be a consequence of the {failure.kind} failure at line "
                    f"{failure.line}, which tracing recovered from.) {later.message}"
                )


def line_nodes(captured: CaptureRecord, shapes: dict[str, str] | None = None
               ) -> dict[tuple[str, int], list[GraphNodeInfo]]:
    """Source line -> the graph nodes it produced (with their propagated shapes), for nodes
    still in the graph."""
    shapes = shapes or {}
    live = set(captured.graph.nodes) if captured.graph is not None else set()
    result: dict[tuple[str, int], list[GraphNodeInfo]] = {}
    for origin in captured.node_origins:
        if origin.node not in live:
            continue
        info = GraphNodeInfo(origin.node.name, origin.node.op, node_target(origin.node),
                             shapes.get(origin.node.name))
        for path, line in dict.fromkeys(origin.lines):
            if path.startswith("<"):
                continue  # code torch.fx generated, such as "<string>"
            result.setdefault((os.path.abspath(path), line), []).append(info)
    return result


def graph_nodes(captured: CaptureRecord, shapes: dict[str, str] | None = None
                ) -> tuple[list[GraphNode], dict[str, str]]:
    """The captured graph's nodes for drawing it, and the class name of each submodule of
    their scopes (from the ``nn_module_stack`` torch.fx records on each node)."""
    shapes = shapes or {}
    places = {}
    for origin in captured.node_origins:
        place = next(((os.path.abspath(path), line) for path, line in origin.lines
                      if not path.startswith("<")), None)
        if place is not None:
            places[origin.node] = place
    nodes, scope_types = [], {}
    for node in captured.graph.nodes if captured.graph is not None else []:
        stack = list(node.meta.get("nn_module_stack", {}).values())
        if node.op == "call_module" and stack and stack[-1][0] == node.target:
            stack.pop()
        scope = [name for name, _ in stack]
        scope_types.update((name, getattr(kind, "__name__", str(kind))) for name, kind in stack)
        path, line = places.get(node, (None, None))
        nodes.append(GraphNode(node.name, node.op, node_target(node),
                               [arg.name for arg in node.all_input_nodes],
                               shapes.get(node.name), scope, path, line))
    return nodes, scope_types


def node_target(node: fx.Node) -> str:
    if isinstance(node.target, str):
        return node.target
    try:
        return fx.node._get_qualified_name(node.target)
    except Exception:
        return repr(node.target)


def relocate_into_decorator(failure: Failure, cls: type, source: ClassSource, path: str) -> None:
    """Put a failure raised by a decorator's wrapper around ``forward`` (or while torch.fx
    patches that wrapper) on the decorated ``def forward``, naming the decorator: the
    wrapper's own lines are usually library code the user cannot change."""
    wrappers: list[Any] = []
    function = cls.forward
    while hasattr(function, "__wrapped__") and hasattr(function, "__code__"):
        wrappers.append(function)
        function = function.__wrapped__
    if not wrappers:
        return
    innermost = failure.frames[-1] if failure.frames else None
    in_wrapper = innermost is not None and any(
        innermost.path == os.path.abspath(wrapper.__code__.co_filename)
        and innermost.function == wrapper.__code__.co_name
        for wrapper in wrappers
    )
    if not in_wrapper and not failure.message.startswith("torch.fx cannot set up tracing"):
        return
    code = wrappers[0].__code__
    # functools.wraps copies __qualname__ from forward; the code object keeps the
    # wrapper's own name, such as "checked.<locals>.wrapper" (3.11+).
    decorator = getattr(code, "co_qualname", code.co_name).split(".<locals>")[0]
    where = f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}"
    if source.forward is not None:
        span = source.forward
        failure.path = path
    else:
        span = source.name_span
    failure.line, failure.column = span.line, span.column
    failure.end_line, failure.end_column = span.end_line, span.end_column
    failure.message = f"In the decorator `{decorator}` around forward ({where}): " \
        + failure.message


def unused_members(model: torch.nn.Module, captured: CaptureRecord, source: ClassSource,
                   path: str) -> list[Hint]:
    """Direct submodules and parameters that ``forward`` never used (FX200)."""
    used = set(captured.module_order) | set(captured.parameter_order)
    for node in captured.graph.nodes if captured.graph is not None else []:
        if node.op in {"get_attr", "call_module"}:
            used.add(str(node.target))

    def is_used(name: str) -> bool:
        return any(item == name or item.startswith(name + ".") for item in used)

    hints = []
    members = [("submodule", name) for name, _ in model.named_children()]
    members += [("parameter", name) for name, _ in model.named_parameters(recurse=False)]
    for kind, name in members:
        if is_used(name):
            continue
        span = source.attribute_spans.get(name, source.name_span)
        hints.append(
            Hint(
                code=CODES["unused"],
                kind="unused",
                message=f"The {kind} '{name}' is never used by forward(); it adds "
                f"{'weights' if kind == 'parameter' else 'parameters'} that the traced "
                "graph does not need.",
                **span.at(path),
                member=name,
            )
        )
    return hints
