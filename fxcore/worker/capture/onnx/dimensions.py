"""Dynamic dimensions the ONNX export makes static: the exporter re-traces the exported
program through its decompositions, and a decomposition may guard a dimension to a size that
torch.export kept symbolic. The ONNX model's inputs take their shapes from the decomposed
program's placeholders, so a size there is a size in the model."""

from __future__ import annotations

import torch
from torch.export.graph_signature import InputKind

SPECIALIZED = "onnx-specialized-dimension"


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
