"""Dynamic dimensions the ONNX export makes static, two ways. Where torch.export refuses a
configured dynamic dimension (FX403), the exporter's capture takes torch's suggested fix
(``refine_dynamic_shapes_from_suggested_fixes``) and exports again: the ONNX model then has
the size torch suggested. And the exporter re-traces the exported program through its
decompositions, where one may guard a dimension to a size torch.export kept symbolic: the ONNX
model's inputs take their shapes from the decomposed program's placeholders."""

from __future__ import annotations

import dataclasses

import torch
from torch.export.graph_signature import InputKind

from fxcore.model.results import CODES, Failure
from fxcore.worker.capture.export import dynamic
from fxcore.worker.job.capture_target import CaptureRecord

SPECIALIZED = "onnx-specialized-dimension"


def refined_by_exporter(export: CaptureRecord) -> list[Failure]:
    """FX603 at each line where torch.export refused a dynamic dimension, when that is all
    it refused: ``torch.onnx.export`` takes torch's fix there and exports a fixed size."""
    if not export.failures or any(failure.kind != dynamic.KIND for failure in export.failures):
        return []
    return [dataclasses.replace(
        failure, kind=SPECIALIZED, code=CODES[SPECIALIZED],
        message=("torch.onnx.export(..., dynamo=True) applies the fix torch suggests for this "
                 "dynamic dimension and exports anyway, so the ONNX model takes a fixed size "
                 f"where `dynamic` asks for any: {failure.message} The ONNX translation of this "
                 "class is not checked further (fx-lsp does not export the refined shapes)."))
        for failure in export.failures]


def _user_input_shapes(program: torch.export.ExportedProgram) -> dict[str, tuple[object, ...]]:
    names = {spec.arg.name for spec in program.graph_signature.input_specs
             if spec.kind == InputKind.USER_INPUT and hasattr(spec.arg, "name")}
    shapes = {}
    for node in program.graph.nodes:
        value = node.meta.get("val")
        if node.op == "placeholder" and node.name in names and isinstance(value, torch.Tensor):
            shapes[node.name] = tuple(value.shape)
    return shapes


def specialized(exported: torch.export.ExportedProgram,
                decomposed: torch.export.ExportedProgram) -> list[str]:
    """A message per input dimension symbolic in ``exported`` but a number in
    ``decomposed``."""
    after = _user_input_shapes(decomposed)
    messages = []
    for name, shape in _user_input_shapes(exported).items():
        for index, size in enumerate(shape):
            kept = after.get(name, ())
            if isinstance(size, torch.SymInt) and index < len(kept) \
                    and isinstance(kept[index], int):
                messages.append(
                    f"Dimension {index} of input `{name}` is dynamic in torch.export's "
                    f"program, but the ONNX export's decompositions make it {kept[index]}: "
                    f"the ONNX model takes that size only")
    return messages
