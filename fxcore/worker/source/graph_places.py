"""The user's line an operation of a compiled graph came from, for a value the graph reads
from tensor data while it runs.

With ``capture_scalar_outputs`` (a fix's config option) dynamo keeps ``.item()`` and
``.tolist()`` in its graph, and the graph's own code (``<eval_with_key>``) asks the tensor for
the number when the recording backend runs it on tensors without data. The stand-ins answer by
the asking line (``values_read.asking_line``), so that the values ``value_plan`` chose for a
line of the user's code (ones its checks accept: split sizes that add up to the length) are
those the graph reads too, and its runtime asserts hold as on real data; read at the graph's
own line, every number was one, and an assert real torch passes failed. The node is found as
dynamo finds it (``torch._dynamo.output_graph``): the graph module's ``_lineno_map`` from the
line in its ``forward`` to the node, whose ``stack_trace`` names the user's file and line.
Both are private to torch: without them the graph's own line stays the place.
"""

from __future__ import annotations

import re
from types import FrameType

import torch

#: A frame of a traceback as ``stack_trace`` holds it: ``File "model.py", line 12, in forward``.
_FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+)')


def user_place(frame: FrameType) -> tuple[str, int] | None:
    """The file and line of the user's code that the graph operation running in ``frame``
    (the generated ``forward`` of a ``torch.fx.GraphModule``) was traced from; None for any
    other frame, or where torch keeps no map to it."""
    module = frame.f_locals.get("self")
    if not isinstance(module, torch.fx.GraphModule):
        return None
    lines = getattr(module, "_lineno_map", None)
    if not isinstance(lines, dict):
        return None
    index = lines.get(frame.f_lineno - frame.f_code.co_firstlineno)
    nodes = list(module.graph.nodes)
    if index is None or not 0 <= index < len(nodes):
        return None
    found = _FRAME.findall(nodes[index].meta.get("stack_trace") or "")
    return (found[-1][0], int(found[-1][1])) if found else None
