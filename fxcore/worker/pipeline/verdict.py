"""A class's ``ModuleResult`` from what its capture recorded: the verdict, the graph's
facts (nodes per source line, the graph for drawing, members ``forward`` never used), shapes,
and the capture mode's own checks of a complete graph.

It reads only the ``CaptureRecord``, so it serves every capture mode alike: a mode that
knows its graph's shapes (export) gives them in the record instead of shape propagation, and
a mode that could not check a class at all says why (``not_checked``: not a verdict).
"""

from __future__ import annotations

from typing import Any

from fxcore.model.results import ExampleInputs, ModuleResult
from fxcore.worker.capture.base import Capture, needs_inputs
from fxcore.worker.graph.facts import graph_nodes, line_nodes, unused_members
from fxcore.worker.graph.shape_facts import recovered_shape_fields, shape_fields
from fxcore.worker.job.capture_target import CaptureRecord, CaptureTarget
from fxcore.worker.job.inputs_decision import InputsDecision
from fxcore.worker.job.job_context import JobContext


def module_verdict(context: JobContext, capture: Capture, target: CaptureTarget,
                   inputs: InputsDecision, record: CaptureRecord) -> ModuleResult:
    """The result of capturing ``target`` on ``inputs`` as ``record`` says."""
    cls, source = target.cls, target.source
    # A mode that runs forward says which inputs it ran on, whatever came of it: a failure
    # may come from the inputs themselves (an image too small for the kernels).
    ran_on = _captured_inputs(inputs) if needs_inputs(capture) else {}
    if record.not_checked is not None:
        return context.module_result(cls, source, status="not-traced", reason=record.not_checked,
                                     failures=record.failures,
                                     instantiated_on=target.instantiated_on,
                                     trace_seconds=record.seconds,
                                     loop_seconds=record.loop_seconds, capture_notes=record.notes,
                                     **ran_on)
    if record.graph_count is not None:
        # A mode of several graphs (compile): its failures are graph breaks between them.
        return context.module_result(
            cls, source, status="failed" if record.failures else "traceable",
            failures=record.failures, instantiated_on=target.instantiated_on,
            line_nodes=line_nodes(record), trace_seconds=record.seconds,
            loop_seconds=record.loop_seconds,
            graph_count=record.graph_count, node_count=record.node_count,
            capture_notes=record.notes, hints=capture.hints(context, target, inputs, record),
            **ran_on)
    if not record.complete:
        recovered: dict[str, Any] = dict(ran_on)
        if record.graph is not None:
            if record.shapes is not None:
                shapes = record.shapes
            else:
                recovered, shapes = recovered_shape_fields(context, target, inputs, record)
            recovered["graph"], recovered["scope_types"] = graph_nodes(record, shapes)
        return context.module_result(cls, source, status="failed", failures=record.failures,
                                     instantiated_on=target.instantiated_on,
                                     trace_seconds=record.seconds,
                                     capture_notes=record.notes, onnx_graph=record.onnx_graph,
                                     onnx_node_count=record.onnx_node_count, **recovered)
    assert record.graph is not None and record.graph_module is not None
    if record.shapes is not None:
        fields, shapes = _captured_inputs(inputs), record.shapes
    else:
        fields, shapes = shape_fields(context, target, inputs, record,
                                      record.graph_module)
    drawn, scope_types = graph_nodes(record, shapes)
    return context.module_result(
        cls,
        source,
        status="traceable",
        instantiated_on=target.instantiated_on,
        node_count=len(record.graph.nodes),
        generated_code=record.graph_module.code.strip() + "\n",
        line_nodes=line_nodes(record, shapes),
        graph=drawn,
        scope_types=scope_types,
        module_order=record.module_order,
        parameter_order=record.parameter_order,
        hints=[*unused_members(target.module, record, source, context.path),
               *capture.hints(context, target, inputs, record)],
        trace_seconds=record.seconds,
        capture_notes=record.notes,
        onnx_graph=record.onnx_graph,
        onnx_node_count=record.onnx_node_count,
        **fields,
    )


def _captured_inputs(inputs: InputsDecision) -> dict[str, Any]:
    """The ``inputs`` field of a capture that ran ``forward`` on the decided example inputs
    (its shapes are its own, not propagated afterwards)."""
    if inputs.raised is not None:  # the first input of those it raised on, to run again
        return {"inputs": ExampleInputs(origin="inferred", tensors={
            name: str(spec) for name, spec in inputs.raised.specs.items()},
            note="forward raises on every input tried; the first of them")}
    if inputs.specs is None or inputs.origin is None:
        return {}
    return {"inputs": ExampleInputs(origin=inputs.origin, tensors={
        name: str(spec) for name, spec in inputs.specs.items()},
        note=inputs.note,
        values={name: repr(value) for name, value in inputs.values.items()},
        found_by=dict(inputs.found_by))}
