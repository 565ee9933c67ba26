"""Where each node of the graphs compile mode recorded came from: the workspace lines of its
``stack_trace``, innermost last, as dynamo wrote them."""

from __future__ import annotations

import os
import re

from torch import fx

from fxcore.worker.job.capture_target import NodeOrigin
from fxcore.worker.job.job_context import JobContext

#: A frame of a node's ``stack_trace`` (traceback text, outermost first).
_TRACE_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def node_origins(graphs: list[fx.GraphModule], context: JobContext) -> list[NodeOrigin]:
    """The workspace line each node of the graphs came from (dynamo's ``stack_trace``)."""
    origins = []
    for graph_module in graphs:
        for node in graph_module.graph.nodes:
            trace = node.meta.get("stack_trace")
            if not trace:
                continue
            lines = [(os.path.abspath(file), int(line))
                     for file, line in _TRACE_FRAME.findall(trace)
                     if context.is_workspace_path(file)]
            if lines:
                origins.append(NodeOrigin(node, lines[::-1]))
    return origins
