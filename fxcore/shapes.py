"""Shape propagation over a traced graph, on meta tensors (or fake ones for a model built on
CPU): every node's output shape, and the node where shapes stop fitting together. Runs in the
worker; nothing is computed, so a 7B-parameter graph takes milliseconds."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any

import torch
from torch import fx
from torch._subclasses.fake_tensor import FakeTensorMode

from fxcore.tensor_spec import TensorSpec


def describe(value: Any) -> str | None:
    """``float32[2, 64]``, ``(float32[2], int64[2, 3])`` for tuples; None without tensors."""
    if isinstance(value, torch.Tensor):
        return str(TensorSpec(str(value.dtype).removeprefix("torch."), tuple(value.shape)))
    if isinstance(value, (tuple, list)) and value:
        parts = [describe(item) for item in value]
        if any(parts):
            return "(" + ", ".join(part or "-" for part in parts) + ")"
    return None


@dataclass
class ShapeError:
    node: fx.Node
    #: The operation, the shapes that met and torch's own words.
    message: str
    error: Exception

    @property
    def is_mismatch(self) -> bool:
        """Shapes that do not fit, rather than an operation meta or fake tensors cannot run
        (data-dependent output, no meta kernel), which says nothing about the model."""
        from torch._subclasses import fake_tensor

        unsupported = (NotImplementedError, fake_tensor.DataDependentOutputException,
                       fake_tensor.DynamicOutputShapeException,
                       fake_tensor.UnsupportedOperatorException)
        text = str(self.error).lower()
        return (isinstance(self.error, (RuntimeError, ValueError, IndexError))
                and not isinstance(self.error, unsupported)
                and "meta" not in text and "fake" not in text)


class _Recorder(fx.Interpreter):
    def __init__(self, module: fx.GraphModule) -> None:
        super().__init__(module)
        self.shapes: dict[str, str] = {}
        self.error: ShapeError | None = None

    def run_node(self, node: fx.Node) -> Any:
        try:
            result = super().run_node(node)
        except Exception as error:
            self.error = ShapeError(node, self._message(node, error), error)
            raise
        shape = describe(result)
        if shape is not None:
            self.shapes[node.name] = shape
        return result

    def _operation(self, node: fx.Node) -> str:
        if node.op == "call_module":
            module = self.module.get_submodule(str(node.target))
            return f"`self.{node.target}` ({type(module).__name__})"
        if node.op == "call_method":
            return f"`.{node.target}()`"
        name = getattr(node.target, "__name__", str(node.target))
        return f"`{name}`"

    def _message(self, node: fx.Node, error: Exception) -> str:
        inputs = [self.shapes[arg.name] for arg in node.all_input_nodes
                  if arg.name in self.shapes]
        met = f" on {' and '.join(inputs)}" if inputs else ""
        detail = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return f"Shapes do not fit: {self._operation(node)}{met} fails: {detail.rstrip('.')}"


def _on_meta(module: torch.nn.Module) -> bool:
    tensors = [*module.parameters(), *module.buffers()]
    return all(tensor.is_meta for tensor in tensors)


def propagate(module: fx.GraphModule, specs: dict[str, TensorSpec]
              ) -> tuple[dict[str, str], ShapeError | None]:
    """Node name -> output shape, and the node where propagation failed (if it did). Inputs
    not in ``specs`` take their default; without one, nothing is propagated."""
    meta = _on_meta(module)
    mode = contextlib.nullcontext() if meta else FakeTensorMode(allow_non_fake_inputs=True)
    recorder = _Recorder(module)
    with mode, torch.no_grad():
        arguments = []
        for node in module.graph.nodes:
            if node.op != "placeholder":
                continue
            spec = specs.get(str(node.target))
            if spec is not None:
                arguments.append(torch.empty(spec.shape, dtype=getattr(torch, spec.dtype),
                                             device="meta" if meta else None))
            elif node.args:
                arguments.append(node.args[0])
            else:
                return {}, None
        try:
            recorder.run(*arguments)
        except Exception:
            if recorder.error is None:
                raise
    return recorder.shapes, recorder.error
