"""Shape propagation over a traced graph, on meta tensors (or fake ones for a model built on
CPU): every node's output shape, and the node where shapes stop fitting together. Runs in the
worker; nothing is computed, so a 7B-parameter graph takes milliseconds."""

from __future__ import annotations

import contextlib
import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import fx
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.nn import functional

from fxcore.model.container_spec import InputSpec, materialized
from fxcore.worker.meta.layer_shapes import module_output_shape
from fxcore.worker.meta.lazy_meta import LazyMetaTensor, describe, is_meta, real
from fxcore.worker.meta.refused_kernels import real_kernels


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



_BINARY = {operator.add, operator.sub, operator.mul, operator.truediv, operator.pow, torch.add,
           torch.sub, torch.mul, torch.div, torch.pow, torch.maximum, torch.minimum}
_BINARY_METHODS = {"add", "sub", "mul", "div", "pow", "maximum", "minimum"}
_DIVISIONS = {operator.truediv, torch.div, "div"}
_UNARY = {operator.neg, torch.neg, torch.relu, torch.sigmoid, torch.tanh, torch.exp, torch.rsqrt,
          torch.sqrt, functional.relu, functional.silu, functional.gelu, torch.abs}
_UNARY_METHODS = {"neg", "relu", "sigmoid", "tanh", "exp", "rsqrt", "sqrt", "abs", "contiguous",
                  "clone"}


_RESULT_TYPES: dict[tuple[Any, ...], torch.dtype] = {}


def _result_type(args: tuple[Any, ...]) -> torch.dtype:
    """``torch.result_type`` of tensors and Python numbers: it depends only on the tensors'
    dtypes and whether they have dimensions, and on the numbers' types, so it is worked out
    once per such combination, on stand-ins."""
    key = tuple((a.dtype, a.dim() == 0) if is_meta(a) else type(a) for a in args)
    dtype = _RESULT_TYPES.get(key)
    if dtype is None:
        stand_ins = [torch.empty(() if part[1] else (1,), dtype=part[0], device="meta")
                     if isinstance(part, tuple) else part(1) for part in key]
        dtype = _RESULT_TYPES[key] = torch.result_type(*stand_ins)
    return dtype


def _attention(args: tuple[Any, ...], kwargs: dict[str, Any]) -> LazyMetaTensor | None:
    """``scaled_dot_product_attention``: the query's shape with the value's last size."""
    if len(args) < 3 or set(kwargs) - {"attn_mask", "dropout_p", "is_causal", "scale"}:
        return None
    query, key, value = args[:3]
    if not all(is_meta(t) for t in (query, key, value)):
        return None
    if not (query.dim() == key.dim() == value.dim() >= 2 and query.shape[-1] == key.shape[-1]
            and key.shape[-2] == value.shape[-2] and query.dtype == key.dtype == value.dtype):
        return None
    return LazyMetaTensor((*query.shape[:-1], value.shape[-1]), query.dtype)


def _mean(args: tuple[Any, ...], kwargs: dict[str, Any]) -> LazyMetaTensor | None:
    """``x.mean(dim, keepdim=...)`` of a floating tensor."""
    if len(args) != 2 or set(kwargs) - {"keepdim"} or not is_meta(args[0]) \
            or not args[0].is_floating_point():
        return None
    tensor, dims = args
    dims = (dims,) if isinstance(dims, int) else dims
    if not isinstance(dims, (tuple, list)) or not all(isinstance(d, int) for d in dims) \
            or not all(-tensor.dim() <= d < tensor.dim() for d in dims):
        return None
    reduced = {d % tensor.dim() for d in dims}
    keep = kwargs.get("keepdim", False)
    shape = [1 if i in reduced else size for i, size in enumerate(tensor.shape)
             if keep or i not in reduced]
    return LazyMetaTensor(shape, tensor.dtype)


def _cat(args: tuple[Any, ...], kwargs: dict[str, Any]) -> LazyMetaTensor | None:
    """``torch.cat`` of same-dtype tensors that agree but on the joined dimension."""
    if not args or len(args) > 2 or set(kwargs) - {"dim"}:
        return None
    tensors = args[0]
    dim = args[1] if len(args) == 2 else kwargs.get("dim", 0)
    if not isinstance(tensors, (tuple, list)) or not tensors or not isinstance(dim, int) \
            or not all(is_meta(t) for t in tensors):
        return None
    first = tensors[0]
    if not -first.dim() <= dim < first.dim():
        return None
    dim %= first.dim()
    if not all(t.dim() == first.dim() and t.dtype == first.dtype
               and all(a == b for i, (a, b) in enumerate(zip(t.shape, first.shape, strict=True))
                       if i != dim) for t in tensors):
        return None
    shape = list(first.shape)
    shape[dim] = sum(t.shape[dim] for t in tensors)
    return LazyMetaTensor(shape, first.dtype)


def fast_result(target: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
                ) -> LazyMetaTensor | None:
    """The meta result of a common operation computed from shapes, or None to run its kernel:
    many meta kernels are Python, a millisecond a call, ten for attention. Whenever shapes do
    not fit, None too, so that the error is torch's own."""
    if target is functional.scaled_dot_product_attention:
        return _attention(args, kwargs)
    if target in ("mean", torch.mean):
        return _mean(args, kwargs)
    if target is torch.cat:
        return _cat(args, kwargs)
    return elementwise(target, args, kwargs)


def _broadcast(shapes: list[tuple[int, ...]]) -> list[int] | None:
    """The broadcast of ``shapes``, or None when they do not broadcast (``torch.broadcast_shapes``
    is a Python reference implementation, several times slower)."""
    dims = max(len(shape) for shape in shapes)
    result = [1] * dims
    for shape in shapes:
        for index, size in enumerate(shape, dims - len(shape)):
            if size == 1:
                continue
            if result[index] == 1:
                result[index] = size
            elif result[index] != size:
                return None
    return result


def elementwise(target: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
                ) -> LazyMetaTensor | None:
    """The meta result of a common elementwise operation from broadcasting and type promotion;
    None to run its kernel (whose meta implementations are Python: a millisecond a call), also
    whenever the shapes do not broadcast, so that the error is torch's own."""
    if kwargs or not args or not all(isinstance(a, (torch.Tensor, LazyMetaTensor, int, float))
                                     for a in args):
        return None
    tensors = [a for a in args if not isinstance(a, (int, float))]
    if not tensors or not all(is_meta(t) for t in tensors):
        return None
    if len(args) == 1 and (target in _UNARY or target in _UNARY_METHODS):
        if not tensors[0].is_floating_point() and target not in (operator.neg, torch.neg,
                                                                  "neg", "contiguous", "clone",
                                                                  torch.abs, "abs"):
            return None
        return LazyMetaTensor(tensors[0].shape, tensors[0].dtype)
    if len(args) == 2 and (target in _BINARY or target in _BINARY_METHODS):
        shape = _broadcast([tuple(t.shape) for t in tensors])
        if shape is None:
            return None
        dtype = _result_type(args)
        if target in _DIVISIONS and not (dtype.is_floating_point or dtype.is_complex):
            dtype = torch.get_default_dtype()
        return LazyMetaTensor(shape, dtype)
    return None


def _real_arguments(arguments: Any) -> Any:
    """``arguments`` with real meta tensors, for an operation without a shape rule."""
    return fx.node.map_aggregate(arguments, real)


class _Runner:
    """Runs a graph node by node as ``fx.Interpreter`` does, without its per-node bookkeeping
    (which costs more than a meta kernel), recording each node's shape."""

    def __init__(self, module: fx.GraphModule) -> None:
        self.module = module
        self.shapes: dict[str, str] = {}
        self.error: ShapeError | None = None

    def _attribute(self, target: str) -> Any:
        value: Any = self.module
        for part in target.split("."):
            # ``_modules`` first: ``nn.Module.__getattr__`` is a Python call per level.
            modules = getattr(value, "_modules", None)
            value = modules[part] if modules and part in modules else getattr(value, part)
        return value

    def _call_module(self, target: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        module = self._attribute(target)
        if len(args) == 1 and not kwargs and is_meta(args[0]):
            shape = module_output_shape(module, args[0])
            if shape is not None:
                return LazyMetaTensor(shape, args[0].dtype)
        return module(*_real_arguments(args), **_real_arguments(kwargs))

    def run(self, arguments: list[Any]) -> None:
        env: dict[fx.Node, Any] = {}
        inputs = iter(arguments)
        for node in self.module.graph.nodes:
            try:
                if node.op == "placeholder":
                    value = next(inputs)
                elif node.op == "get_attr":
                    value = self._attribute(str(node.target))
                else:
                    args = fx.node.map_arg(node.args, env.__getitem__)
                    kwargs = fx.node.map_arg(node.kwargs, env.__getitem__)
                    if node.op == "call_function":
                        value = fast_result(node.target, args, kwargs)
                        if value is None:
                            value = node.target(*_real_arguments(args),
                                                **_real_arguments(kwargs))
                    elif node.op == "call_method":
                        value = fast_result(node.target, args, kwargs)
                        if value is None:
                            args = _real_arguments(args)
                            value = getattr(args[0], node.target)(*args[1:],
                                                                  **_real_arguments(kwargs))
                    elif node.op == "call_module":
                        value = self._call_module(str(node.target), args, kwargs)
                    else:  # output
                        value = args[0]
            except Exception as error:
                self.error = ShapeError(node, self._message(node, error), error)
                raise
            env[node] = value
            shape = describe(value)
            if shape is not None:
                self.shapes[node.name] = shape

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
    # The dictionaries directly, in one loop: ``parameters()`` and ``buffers()`` walk the tree
    # twice over, and generators over ``modules()`` cost three times this.
    stack, seen = [module], {id(module)}
    while stack:
        current = stack.pop()
        for tensors in (current._parameters, current._buffers):
            for tensor in tensors.values():
                if tensor is not None and not tensor.is_meta:
                    return False
        for child in current._modules.values():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                stack.append(child)
    return True


def propagate(module: fx.GraphModule, specs: Mapping[str, InputSpec]
              ) -> tuple[dict[str, str], ShapeError | None]:
    """Node name -> output shape, and the node where propagation failed (if it did). Inputs
    not in ``specs`` take their default; without one, nothing is propagated."""
    meta = _on_meta(module)
    mode = contextlib.nullcontext() if meta else FakeTensorMode(allow_non_fake_inputs=True)
    recorder = _Runner(module)
    # A meta kernel stricter than the CPU's (a grouped matmul in float32) is no mismatch of
    # the inputs: the CPU kernel decides (``refused_kernels``).
    with mode, real_kernels(), torch.inference_mode():
        arguments = []
        for node in module.graph.nodes:
            if node.op != "placeholder":
                continue
            spec = specs.get(str(node.target))
            if spec is not None:
                arguments.append(materialized(spec, lambda leaf: LazyMetaTensor(
                    leaf.shape, getattr(torch, leaf.dtype)) if meta else torch.empty(
                    leaf.shape, dtype=getattr(torch, leaf.dtype))))
            elif node.args:
                arguments.append(node.args[0])
            else:
                return {}, None
        try:
            recorder.run(arguments)
        except Exception:
            if recorder.error is None:
                raise
    return recorder.shapes, recorder.error
