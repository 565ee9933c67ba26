"""Shapes from a real run, for the third-party shape tests: each class given on standard input
(``[{"module", "class", "inputs": {"x": "float32[2, 3, 32, 32]"}}]``) is built on the CPU,
traced with plain ``torch.fx.symbolic_trace`` and run on real tensors of those shapes in eval
mode; standard output gets ``{"module:class": {"shapes": {node name: shape}, "error": None}}``,
the shapes up to the node that raised when the model cannot run on those inputs.

It runs the models, so it runs in a subprocess of the test, never in fx-lsp."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import torch
from torch import fx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "workspace"))
sys.path.insert(0, str(HERE.parents[1]))

from fxcore.model.tensor_spec import parse_spec  # noqa: E402
from fxcore.worker.meta.lazy_meta import describe  # noqa: E402


class _Record(fx.Interpreter):
    def __init__(self, module: fx.GraphModule) -> None:
        super().__init__(module)
        self.shapes: dict[str, str | None] = {}

    def run_node(self, node: fx.Node) -> object:
        result = super().run_node(node)
        self.shapes[node.name] = describe(result)
        return result


def real_shapes(module_name: str, class_name: str, inputs: dict[str, str]) -> dict[str, object]:
    recorder: _Record | None = None
    try:
        model = getattr(importlib.import_module(module_name), class_name)()
        graph_module = fx.symbolic_trace(model)
        recorder = _Record(graph_module)
        with torch.no_grad():
            recorder.run(*_arguments(graph_module, inputs))
        return {"shapes": recorder.shapes, "error": None}
    except Exception as error:
        return {"shapes": recorder.shapes if recorder else {},
                "error": f"{type(error).__name__}: {error}"[:300]}


def _arguments(graph_module: fx.GraphModule, inputs: dict[str, str]) -> list[object]:
    arguments: list[object] = []
    for node in graph_module.graph.nodes:
        if node.op != "placeholder":
            continue
        text = inputs.get(str(node.target))
        if text is None:
            arguments.append(node.args[0] if node.args else None)
            continue
        spec = parse_spec(text)
        dtype = getattr(torch, spec.dtype)
        arguments.append(torch.randn(spec.shape, dtype=dtype) if dtype.is_floating_point
                         else torch.zeros(spec.shape, dtype=dtype))
    return arguments


def main() -> None:
    torch.manual_seed(0)
    found: dict[str, object] = {}
    for item in json.load(sys.stdin):
        found[f"{item['module']}:{item['class']}"] = real_shapes(item["module"], item["class"],
                                                                 item["inputs"])
    json.dump(found, sys.stdout)


if __name__ == "__main__":
    main()
