"""The fx capture as a means to an end: a graph of a class to infer the example inputs of the
capture modes that need them from (``fxcore.worker.inputs.deciding``), complete or recovered
past the places torch.fx cannot trace. Kept in the fx capture's folder, so that the worker's
inputs stage uses no torch.fx capture API itself: the pipeline runs it between the start and
the end of the inputs' search (``fxcore.worker.pipeline.capturing``)."""

from __future__ import annotations

import torch
from torch import fx

from fxcore.worker.capture.fx.tracing import FxCapture
from fxcore.worker.job.capture_target import CaptureTarget
from fxcore.worker.job.inputs_decision import UNDECIDED
from fxcore.worker.job.job_context import JobContext


def pre_trace(context: JobContext, target: CaptureTarget
               ) -> tuple[fx.GraphModule | None, torch.nn.Module | None]:
    """The fx capture's graph of ``target`` (complete, or recovered past its failures) as a
    module to infer inputs from, and the instance it was traced from."""
    record = FxCapture().capture(context, target, UNDECIDED)
    if record.graph_module is not None:
        return record.graph_module, record.root
    if record.graph is None or record.root is None:
        return None, None
    try:
        return fx.GraphModule(record.root, record.graph, target.cls.__name__), record.root
    except Exception:  # a recovered graph may not make a module: nothing to infer from
        return None, None
