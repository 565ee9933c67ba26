"""What a captured graph tells beyond itself: the graph nodes of each source line, the graph
for drawing, and members that ``forward`` never used (FX200). Read from a ``CaptureRecord``,
whatever mode captured it."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import torch
from torch import fx

from fxcore.model.results import CODES, GraphNode, GraphNodeInfo, Hint
from fxcore.worker.graph.member_uses import aliased_names, names_forward_reads
from fxcore.workspace.discovery import ClassSource

if TYPE_CHECKING:
    from fxcore.worker.job.capture_target import CaptureRecord


def line_nodes(captured: CaptureRecord, shapes: dict[str, str] | None = None
               ) -> dict[tuple[str, int], list[GraphNodeInfo]]:
    """Source line -> the graph nodes it produced (with their propagated shapes), for nodes
    still in the graph (all recorded nodes of a capture of several graphs, which has no one
    ``graph``)."""
    shapes = shapes or {}
    live = set(captured.graph.nodes) if captured.graph is not None else set()
    result: dict[tuple[str, int], list[GraphNodeInfo]] = {}
    for origin in captured.node_origins:
        if captured.graph is not None and origin.node not in live:
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
        # torch.export's stacks start with the root module itself, under the name "", and
        # name each class by its qualified name as a string.
        stack = [(name, kind) for name, kind in stack if name]
        scope = [name for name, _ in stack]
        scope_types.update((name, getattr(kind, "__name__", str(kind).rsplit(".", 1)[-1]))
                           for name, kind in stack)
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


def unused_members(model: torch.nn.Module, captured: CaptureRecord, source: ClassSource,
                   path: str) -> list[Hint]:
    """Direct submodules and parameters that ``forward`` never used (FX200)."""
    used = set(captured.module_order) | set(captured.parameter_order)
    for node in captured.graph.nodes if captured.graph is not None else []:
        if node.op in {"get_attr", "call_module"}:
            used.add(str(node.target))
    used = aliased_names(model, used) | names_forward_reads(model)

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
