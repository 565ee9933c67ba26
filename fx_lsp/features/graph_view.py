"""A class's traced graph for drawing: the ``fxLsp/graph`` answer (docs/protocol.md), which
the VS Code graph view and ``fx-lsp graph``'s HTML file both draw with the same code.
The server sends a huge graph a page at a time (``limit``, ``offset``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path

from fx_lsp.features import positions
from fxcore.model.results import Failure, ModuleResult, Range

#: What a failed class's graph is.
RECOVERED_NOTE = ("The graph tracing recovered past the failures: nodes after the first one "
                  "may not be what the code computes.")
#: The most nodes one ``fxLsp/graph`` answer holds. The view draws at most 400 boxes, a
#: collapsed submodule standing for many nodes; the largest ordinary models trace to a few
#: thousand nodes (Llama-2-7B: 2,005), while a 200,000-node class made a 55 MB answer.
NODE_LIMIT = 5_000


def _line_range(lines: list[str], line: int, encoding: str) -> types.Range:
    """The text of a source line, without its indentation."""
    text = lines[line - 1] if 0 < line <= len(lines) else ""
    start = len(text) - len(text.lstrip()) + 1
    return positions.range_to_lsp(lines, Range(line, start, line, len(text.rstrip()) + 1),
                                  encoding)


def _uri(path: str) -> str:
    return from_fs_path(path) or path


def _location(uri: str, lsp_range: types.Range) -> dict[str, Any]:
    return {"uri": uri, "range": {
        "start": {"line": lsp_range.start.line, "character": lsp_range.start.character},
        "end": {"line": lsp_range.end.line, "character": lsp_range.end.character}}}


def _failure(failure: Failure, severity: str, lines_of: Callable[[str], list[str]],
             uri_of: Callable[[str], str], encoding: str,
             nodes_at: dict[tuple[str, int], list[str]]) -> dict[str, Any]:
    places = [(failure.path, failure.line), *((f.path, f.line) for f in failure.frames)]
    nodes = list(dict.fromkeys(name for place in places for name in nodes_at.get(place, [])))
    lsp_range = positions.range_to_lsp(lines_of(failure.path), failure, encoding)
    return {"code": failure.code, "severity": severity, "message": failure.message,
            "location": _location(uri_of(failure.path), lsp_range),
            "nodes": nodes}


def graph(module: ModuleResult, lines_of: Callable[[str], list[str]], encoding: str,
          offset: int = 0, limit: int | None = None) -> dict[str, Any]:
    """The drawing data of one class: its nodes with their shapes, scopes, inputs and source
    lines, and its failures placed on the nodes of their lines. With ``limit``, only the
    nodes from ``offset`` on, at most ``limit`` of them (``truncated`` when more follow)."""
    # Once per file: a graph has thousands of nodes, from a handful of files.
    lines_of, uri_of = functools.cache(lines_of), functools.cache(_uri)
    nodes, nodes_at = [], {}
    forward = module.forward
    total = len(module.graph)
    page = module.graph[offset:] if limit is None else module.graph[offset:offset + limit]
    for node in page:
        location = None
        if node.path is not None and node.line is not None:
            location = _location(uri_of(node.path),
                                 _line_range(lines_of(node.path), node.line, encoding))
            nodes_at.setdefault((node.path, node.line), []).append(node.name)
        elif node.op == "placeholder" and forward is not None:
            # An argument of forward: torch.fx made it, from the signature.
            location = _location(uri_of(module.path),
                                 positions.range_to_lsp(lines_of(module.path), forward, encoding))
        nodes.append({"name": node.name, "op": node.op, "target": node.target,
                      "inputs": node.inputs, "shape": node.shape, "scope": node.scope,
                      "location": location})
    failures = [
        *(_failure(f, "error", lines_of, uri_of, encoding, nodes_at) for f in module.failures),
        *(_failure(f, "warning", lines_of, uri_of, encoding, nodes_at)
          for f in module.shape_errors),
    ]
    notes = [RECOVERED_NOTE] if module.status == "failed" and nodes else []
    truncated = offset + len(nodes) < total
    if nodes and (truncated or offset):
        notes.append(f"Showing nodes {offset + 1:,}-{offset + len(nodes):,} of the {total:,} "
                     "in graph order: the others are left out of this view.")
    elif total and not nodes:
        notes.append(f"The graph has {total:,} nodes, none from node {offset + 1:,} on.")
    if module.shapes_note:
        notes.append(module.shapes_note)
    if not total:
        notes.append(module.reason or "No graph: tracing recorded no node of this class.")
    return {
        "className": module.class_name,
        "qualifiedName": module.qualified_name,
        "status": module.status,
        "location": _location(uri_of(module.path),
                              positions.range_to_lsp(lines_of(module.path), module, encoding)),
        "inputs": module.inputs.tensors if module.inputs else None,
        "inputsFrom": module.inputs.origin if module.inputs else None,
        "outputShape": module.output_shape,
        "notes": notes,
        "nodes": nodes,
        "total": total,
        "offset": offset,
        "truncated": truncated,
        "scopes": module.scope_types,
        "failures": failures,
        "onnx": _onnx_model(module),
    }


def _onnx_model(module: ModuleResult) -> dict[str, Any] | None:
    """The onnx mode's translated model, beside the exported program the graph is: its node
    count and its first nodes; None where no model was translated."""
    if module.onnx_node_count is None:
        return None
    return {"nodeCount": module.onnx_node_count,
            "truncated": len(module.onnx_graph) < module.onnx_node_count,
            "nodes": [{"opType": node.op_type, "name": node.name, "domain": node.domain,
                       "inputs": node.inputs, "outputs": node.outputs}
                      for node in module.onnx_graph]}
