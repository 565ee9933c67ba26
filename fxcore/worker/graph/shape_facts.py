"""Shapes of a captured graph: the example inputs (decided before capture for a mode that
needs them, else from the captured graph: ``fxcore.worker.inputs.deciding``), shapes propagated on
meta tensors through the graph (``shapes``), and FX300 where they stop fitting together.

Shapes are extras: a model may hold anything, so every failure here becomes a note on the
result, never a failed verdict.
"""

from __future__ import annotations

import time
from typing import Any

from torch import fx

from fxcore.model.instance_trust import guessed_instance
from fxcore.model.results import ExampleInputs, Failure
from fxcore.worker.graph.facts import line_nodes
from fxcore.worker.inputs.deciding import decided_inputs, given_inputs
from fxcore.worker.job.capture_target import CaptureRecord, CaptureTarget
from fxcore.worker.job.inputs_decision import InputsDecision
from fxcore.worker.job.job_context import JobContext, describe_exception
from fxcore.worker.meta.shapes import ShapeError, propagate
from fxcore.worker.source.locate import instruction_position

#: Where the example inputs came from, as a shape failure's message says it.
_INPUTS_ORIGIN = {
    "config": "configured under [tool.fx-lsp.modules]",
    "annotation": "read from forward's annotations",
    "inferred": "inferred from the first layers that use them",
    "parent": "the ones its parent passes it",
    "example": "the example its code gives",
}


def shape_fields(context: JobContext, target: CaptureTarget, inputs: InputsDecision,
                 record: CaptureRecord, graph_module: fx.GraphModule
                 ) -> tuple[dict[str, Any], dict[str, str]]:
    """The fields of a module result about shapes (on ``inputs`` where they were decided
    before the capture, else on those inferred from its graph), and node name -> shape."""
    started = time.perf_counter()
    fields, shapes = _propagated(context, target, inputs, record, graph_module)
    fields["shape_seconds"] = time.perf_counter() - started
    return fields, shapes


def recovered_shape_fields(context: JobContext, target: CaptureTarget,
                           inputs: InputsDecision, record: CaptureRecord
                           ) -> tuple[dict[str, Any], dict[str, str]]:
    """Shapes over the graph a capture recovered past its failures, marked as such (the
    fields of a module result, and node name -> shape); a shape error there is likely an
    artefact of the recovery, so it is only a note."""
    try:
        graph_module = fx.GraphModule(record.root, record.graph, target.cls.__name__)
    except Exception:
        return {}, {}
    fields, shapes = shape_fields(context, target, inputs, record, graph_module)
    errors = fields.pop("shape_errors", [])
    note = ("Shapes are of the graph recovered past the failures: after the first one "
            "they may not be what the code computes.")
    if errors:
        note += f" Propagation stopped: {errors[0].message}"
    fields["shapes_note"] = f"{note} {fields.get('shapes_note') or ''}".strip()
    if not shapes:
        return {"shapes_note": fields["shapes_note"]}, {}
    return {**fields, "line_nodes": line_nodes(record, shapes),
            "node_count": len(record.graph.nodes)}, shapes


def _propagated(context: JobContext, target: CaptureTarget, given: InputsDecision,
                record: CaptureRecord, graph_module: fx.GraphModule
                ) -> tuple[dict[str, Any], dict[str, str]]:
    try:
        decided = (given_inputs(given)
                   or decided_inputs(context, target.cls, graph_module, record.root))
        inputs = decided.inputs
        if inputs is None:
            return {"shapes_note": f"No shapes: {decided.note}."}, {}
        # Choosing inferred sizes propagated them over this graph already.
        shapes, error = decided.propagated or propagate(graph_module, decided.specs)
    except Exception as error:  # a model may hold anything: shapes are extras
        return {"shapes_note": f"No shapes: {describe_exception(error)}."}, {}
    output = next(node for node in graph_module.graph.nodes if node.op == "output")
    fields: dict[str, Any] = {"inputs": inputs, "output_shape": shapes.get(output.name)}
    if error is not None and error.is_mismatch:
        fields["shape_errors"] = [_shape_failure(context, error, record, inputs, target)]
    elif error is not None:
        fields["shapes_note"] = (f"Shapes stop at `{error.node.name}`, which cannot run "
                                 f"on meta tensors: {error.message}")
    return fields, shapes


def _shape_failure(context: JobContext, error: ShapeError, record: CaptureRecord,
                   inputs: ExampleInputs, target: CaptureTarget) -> Failure:
    origin = next((o for o in record.node_origins if o.node is error.node), None)
    # Frames of code torch.fx generated ("<string>") are no place of the user's.
    stack = [instruction_position(code, lasti, line)
             for code, lasti, line in reversed(origin.instructions)
             if not code.co_filename.startswith("<")] if origin else []
    given = ", ".join(f"{name}: {spec}" for name, spec in inputs.tensors.items())
    instance = guessed_instance(target.cls.__name__, target.arguments)
    origin = _INPUTS_ORIGIN[inputs.origin] + (f"; {inputs.note}" if inputs.note else "")
    if instance is not None:
        advice = (f" The instance, {instance}, was built with guessed arguments: the sizes may "
                  "be the guess's, and the model built with its real arguments may well accept "
                  "these inputs; configure them under [tool.fx-lsp.modules].")
    elif target.arguments is not None and target.arguments.origin == "parent" \
            and inputs.origin not in ("config", "parent"):
        parent = (target.arguments.parent or "").rpartition(":")[2]
        unrecorded = (f" (the inputs it passes were not recorded: "
                      f"{target.parent_inputs_missing})" if target.parent_inputs_missing
                      else "")
        advice = (f" These inputs were inferred for this submodule alone: {parent}, which "
                  f"builds it, passes it inputs of its own{unrecorded}, and its own check "
                  "runs this code on them.")
    elif inputs.origin == "parent":
        parent = (target.arguments.parent if target.arguments else None) or "the parent"
        advice = (f" If the real inputs of {parent.rpartition(':')[2]} differ, give them under "
                  f'[tool.fx-lsp.modules."{parent}"] inputs.')
    else:
        advice = (" If the real inputs differ, give them under [tool.fx-lsp.modules] inputs."
                  if inputs.origin != "config" else "")
    return context.failure("shape", f"{error.message}. With inputs {given} ({origin}).{advice}",
                           stack, target.source.name_span)
