"""One capture of a built instance, as the pipeline leads it through the stages: the example
inputs decided first for a mode that needs them (the inputs stage, on the graph of a
pre-trace with the fx capture), then the capture itself."""

from __future__ import annotations

from fxcore.worker.capture.base import Capture, needs_inputs
from fxcore.worker.capture.fx.pre_trace import pre_trace
from fxcore.worker.inputs.deciding import finish_search, start_search
from fxcore.worker.shared.capture_target import CaptureTarget
from fxcore.worker.shared.job_context import JobContext


def decide_before_capture(context: JobContext, capture: Capture,
                          target: CaptureTarget) -> None:
    """Decide ``target``'s example inputs for ``capture`` when it needs them, once per target
    (``inputs.deciding``): unless configured, inferred from the fx capture's graph of it."""
    # A mode that does not declare it captures without inputs, as fx does.
    if not needs_inputs(capture):
        return
    search = start_search(context, target)
    if search is None:
        return
    graph_module, root = (None, None) if search.configured else pre_trace(context, target)
    finish_search(context, target, search, graph_module, root)
