"""``graph``: a class's traced graph, found among a run's results (``find_class``), and the
data of it that ``fx-lsp mcp``'s ``graph`` returns (``graph_json``); the command line draws
it (``fx_lsp.cli.graph_html``)."""

from __future__ import annotations

import dataclasses
from typing import Any

from fxcore.model.results import FileResult, ModuleResult, first_verdicts


class GraphTargetError(Exception):
    """The class asked for is not in the file's results, or has no graph; ``file_errors``:
    the messages of the file's errors (why it could not be traced, if it could not)."""

    def __init__(self, message: str, file_errors: list[str] | None = None) -> None:
        super().__init__(message)
        self.file_errors = file_errors or []


def find_class(results: list[FileResult], class_name: str | None) -> ModuleResult:
    """The class ``class_name`` of a file's results (its first verdict, which has a graph);
    None: the one class of the file with a graph."""
    modules = [module for result in results for module in first_verdicts(result.modules)]
    errors = [str(error.message) for result in results for error in result.errors]
    if not modules:
        raise GraphTargetError("no nn.Module class was traced in this file"
                               + (f": {errors[0]}" if errors else ""), errors)
    names = ", ".join(module.class_name for module in modules)
    if class_name is None:
        with_graph = [module for module in modules if module.graph]
        if len(with_graph) != 1:
            raise GraphTargetError(f"name the class as PATH::Class; the file has {names}", errors)
        return with_graph[0]
    found = next((module for module in modules if module.class_name == class_name), None)
    if found is None:
        raise GraphTargetError(f"no class {class_name} among the file's classes: {names}", errors)
    if not found.graph:
        raise GraphTargetError(f"{class_name} has no graph: {found.reason or found.status}", errors)
    return found


def graph_json(module: ModuleResult) -> dict[str, Any]:
    """The class, its verdict, the forward torch.fx generates, and each node (name, op,
    target, inputs, shape, and the source file and line that created it)."""
    return {"class": module.class_name, "qualified_name": module.qualified_name,
            "status": module.status, "generated_code": module.generated_code,
            "nodes": [dataclasses.asdict(node) for node in module.graph]}
