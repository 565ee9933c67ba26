"""``graph``: a class's traced graph, found among a run's results (``find_class``), and the
data of it that ``fx-lsp mcp``'s ``graph`` returns (``graph_json``); the command line draws
it (``fx_lsp.cli.graph_html``)."""

from __future__ import annotations

import dataclasses
from typing import Any

from fxcore.model.results import FileResult, ModuleResult, first_verdicts


class GraphTargetError(Exception):
    """The class asked for is not in the file's results, or has no graph."""


def find_class(results: list[FileResult], class_name: str | None) -> ModuleResult:
    """The class ``class_name`` of a file's results (its first verdict, which has a graph);
    None: the one class of the file with a graph."""
    modules = [module for result in results for module in first_verdicts(result.modules)]
    if not modules:
        errors = [error.message for result in results for error in result.errors]
        raise GraphTargetError("no nn.Module class was traced in this file"
                               + (f": {errors[0]}" if errors else ""))
    names = ", ".join(module.class_name for module in modules)
    if class_name is None:
        with_graph = [module for module in modules if module.graph]
        if len(with_graph) != 1:
            raise GraphTargetError(f"name the class as PATH::Class; the file has {names}")
        return with_graph[0]
    found = next((module for module in modules if module.class_name == class_name), None)
    if found is None:
        raise GraphTargetError(f"no class {class_name} among the file's classes: {names}")
    if not found.graph:
        raise GraphTargetError(f"{class_name} has no graph: {found.reason or found.status}")
    return found


def graph_json(module: ModuleResult) -> dict[str, Any]:
    """The class, its verdict, the forward torch.fx generates, and each node (name, op,
    target, inputs, shape, and the source file and line that created it)."""
    return {"class": module.class_name, "qualified_name": module.qualified_name,
            "status": module.status, "generated_code": module.generated_code,
            "nodes": [dataclasses.asdict(node) for node in module.graph]}
