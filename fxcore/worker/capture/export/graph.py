"""What an exported program's graph gives the editor: the user lines each node came from
(torch records them in ``node.meta["stack_trace"]``), each node's shape (its fake value),
and the submodules and parameters the graph uses."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import torch
from torch import fx

from fxcore.model.results import Failure
from fxcore.worker.job.capture_target import NodeOrigin

_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def node_origins(graph: fx.Graph, is_workspace_path: Callable[[str], bool]) -> list[NodeOrigin]:
    """Each node's workspace lines, innermost first (as the fx capture records them)."""
    origins = []
    for node in graph.nodes:
        trace = node.meta.get("stack_trace") or ""
        lines = [(path, int(line)) for path, line in _FRAME.findall(trace)
                 if is_workspace_path(path)]
        if lines:
            origins.append(NodeOrigin(node, lines[::-1]))
    return origins


def shapes(graph: fx.Graph) -> dict[str, str]:
    """Node name -> ``float32[2, 4]`` for each node whose value is a tensor."""
    found = {}
    for node in graph.nodes:
        value = node.meta.get("val")
        if isinstance(value, torch.Tensor):
            dtype = str(value.dtype).removeprefix("torch.")
            found[node.name] = f"{dtype}[{', '.join(str(size) for size in value.shape)}]"
    return found


def module_order(graph: fx.Graph) -> list[str]:
    """Qualified names of the submodules whose forward made nodes, in graph order."""
    seen: dict[str, None] = {}
    for node in graph.nodes:
        for name, _ in (node.meta.get("nn_module_stack") or {}).values():
            if name:
                seen.setdefault(name)
    return list(seen)


def parameter_order(program: torch.export.ExportedProgram) -> list[str]:
    """Qualified names of the parameters the graph uses, in the order of first use (export
    lifts every parameter to an input, used or not)."""
    of_input = program.graph_signature.inputs_to_parameters
    seen: dict[str, None] = {}
    for node in program.graph_module.graph.nodes:
        for used in node.all_input_nodes:
            if used.op == "placeholder" and used.name in of_input:
                seen.setdefault(of_input[used.name])
    return list(seen)


def program_graph(program: torch.export.ExportedProgram, failures: list[Failure],
                  is_workspace_path: Callable[[str], bool]) -> dict[str, Any]:
    """A ``CaptureRecord``'s graph fields for ``program`` (the export and onnx modes'):
    its graph and module (kept as the code to show only without failures), each node's
    workspace lines and shape, and the submodules and parameters it uses."""
    module = program.graph_module
    return {"graph": module.graph, "root": module,
            "graph_module": module if not failures else None,
            "node_origins": node_origins(module.graph, is_workspace_path),
            "module_order": module_order(module.graph),
            "parameter_order": parameter_order(program),
            "shapes": shapes(module.graph)}
