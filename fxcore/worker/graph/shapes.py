"""Shape propagation over a traced graph, on meta tensors (or fake ones for a model built on
CPU): every node's output shape, and the node where shapes stop fitting together. Runs in the
worker; nothing is computed, so a 7B-parameter graph takes milliseconds."""

from __future__ import annotations

import contextlib
import math
import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import fx, nn
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.nn import functional

from fxcore.model.container_spec import InputSpec, materialized
from fxcore.model.tensor_spec import TensorSpec
from fxcore.worker.capture.refused_kernels import real_kernels


class LazyMetaTensor:
    """A meta tensor known by its dtype and shape alone: what an operation computed from shapes
    returns. Making a real meta tensor costs more than the rest of a node's bookkeeping (about
    5 us); one is made only when an operation without a shape rule takes this value. Has the
    few members of ``torch.Tensor`` the shape rules read."""

    __slots__ = ("_tensor", "dtype", "shape")
    is_meta = True

    def __init__(self, shape: Any, dtype: torch.dtype) -> None:
        self.shape = tuple(shape)
        self.dtype = dtype
        self._tensor: torch.Tensor | None = None

    def dim(self) -> int:
        return len(self.shape)

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def tensor(self) -> torch.Tensor:
        if self._tensor is None:
            self._tensor = torch.empty(self.shape, dtype=self.dtype, device="meta")
        return self._tensor


#: What the shape rules read shapes and dtypes from.
MetaValue = torch.Tensor | LazyMetaTensor


def _real(value: Any) -> Any:
    return value.tensor() if type(value) is LazyMetaTensor else value


def _is_meta(value: Any) -> bool:
    return type(value) is LazyMetaTensor or (isinstance(value, torch.Tensor) and value.is_meta)


_DESCRIBED: dict[tuple[torch.dtype, tuple[int, ...]], str] = {}


def describe(value: Any) -> str | None:
    """``float32[2, 64]``, ``(float32[2], int64[2, 3])`` for tuples; None without tensors."""
    if isinstance(value, (torch.Tensor, LazyMetaTensor)):
        key = (value.dtype, tuple(value.shape))
        text = _DESCRIBED.get(key)
        if text is None:  # a graph repeats a few shapes many times over
            text = _DESCRIBED[key] = str(TensorSpec(str(value.dtype).removeprefix("torch."),
                                                    tuple(value.shape)))
        return text
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


_SAME_SHAPE = (nn.Identity, nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.ReLU,
               nn.ReLU6, nn.GELU, nn.SiLU, nn.Tanh, nn.Sigmoid, nn.LeakyReLU, nn.Hardswish,
               nn.Hardsigmoid, nn.ELU, nn.Mish, nn.Softplus)
_BATCH_NORMS = {nn.BatchNorm1d: (2, 3), nn.BatchNorm2d: (4,), nn.BatchNorm3d: (5,)}
_CONVOLUTIONS = {nn.Conv1d: 1, nn.Conv2d: 2, nn.Conv3d: 3}
_POOLS = {nn.MaxPool1d: 1, nn.MaxPool2d: 2, nn.MaxPool3d: 3, nn.AvgPool1d: 1, nn.AvgPool2d: 2,
          nn.AvgPool3d: 3}
_ADAPTIVE_POOLS = {nn.AdaptiveAvgPool1d: 1, nn.AdaptiveAvgPool2d: 2, nn.AdaptiveAvgPool3d: 3,
                   nn.AdaptiveMaxPool1d: 1, nn.AdaptiveMaxPool2d: 2, nn.AdaptiveMaxPool3d: 3}


def _convolution(module: nn.Module, x: MetaValue, dims: int) -> tuple[int, ...] | None:
    if x.dim() != dims + 2 or not isinstance(module.padding, (tuple, str)):
        return None
    if x.shape[1] != module.in_channels:
        raise RuntimeError(
            f"Given groups={module.groups}, weight of size {list(module.weight.shape)}, expected "
            f"input{list(x.shape)} to have {module.in_channels} channels, but got "
            f"{x.shape[1]} channels instead")
    if module.padding == "same":
        return (x.shape[0], module.out_channels, *x.shape[2:])
    padding = (0,) * dims if module.padding == "valid" else module.padding
    spatial = [
        (size + 2 * pad - dilation * (kernel - 1) - 1) // stride + 1
        for size, pad, dilation, kernel, stride in zip(
            x.shape[2:], padding, module.dilation, module.kernel_size, module.stride,
            strict=True)
    ]
    if any(size <= 0 for size in spatial):
        return None  # the kernel says why, in its own words
    return (x.shape[0], module.out_channels, *spatial)


def _per_dimension(value: Any, dims: int) -> tuple[Any, ...]:
    return tuple(value) if isinstance(value, (tuple, list)) else (value,) * dims


def _pooling(module: nn.Module, x: MetaValue, dims: int) -> tuple[int, ...] | None:
    """Max and average pooling: torch's ``pooling_output_shape``, for the settings every
    kernel accepts (anything else goes to the kernel, which says why)."""
    if x.dim() not in (dims + 1, dims + 2) or getattr(module, "return_indices", False) \
            or not all(size > 0 for size in x.shape):
        return None
    kernel = _per_dimension(module.kernel_size, dims)
    stride = _per_dimension(module.kernel_size if module.stride is None else module.stride,
                            dims)
    padding = _per_dimension(module.padding, dims)
    dilation = _per_dimension(getattr(module, "dilation", 1), dims)
    settings = (*kernel, *stride, *padding, *dilation)
    if not all(len(part) == dims for part in (kernel, stride, padding, dilation)) \
            or not all(type(value) is int for value in settings) \
            or not all(value > 0 for value in (*kernel, *stride, *dilation)) \
            or not all(0 <= pad <= size // 2 for pad, size in zip(padding, kernel, strict=True)):
        return None
    sizes = []
    for size, k, step, pad, dilate in zip(x.shape[-dims:], kernel, stride, padding, dilation,
                                          strict=True):
        if size < dilate * (k - 1) + 1:
            return None  # a window larger than the input: some kernels refuse it
        span = size + 2 * pad - dilate * (k - 1) - 1
        out = (span + (step - 1 if module.ceil_mode else 0)) // step + 1
        if module.ceil_mode and (out - 1) * step >= size + pad:
            out -= 1  # the last window must start inside the input or its left padding
        sizes.append(out)
    return (*x.shape[:-dims], *sizes)


def _adaptive_pooling(module: nn.Module, x: MetaValue, dims: int) -> tuple[int, ...] | None:
    """Adaptive pooling: the configured output size, ``None`` keeping the input's (2d and 3d
    only)."""
    wanted = _per_dimension(module.output_size, dims)
    if x.dim() not in (dims + 1, dims + 2) or getattr(module, "return_indices", False) \
            or len(wanted) != dims or not all(size > 0 for size in x.shape) \
            or not all((size is None and dims > 1) or (type(size) is int and size > 0)
                       for size in wanted):
        return None
    return (*x.shape[:-dims], *(size if out is None else out
                                for size, out in zip(x.shape[-dims:], wanted, strict=True)))


def module_output_shape(module: nn.Module, x: MetaValue) -> tuple[int, ...] | None:
    """The output shape of common ``torch.nn`` layers computed from their sizes, with the
    error torch raises when the input does not fit; None to run the layer's meta kernel.
    (Meta kernels of convolutions, batch norm and adaptive pooling are Python: up to several
    milliseconds a call.)"""
    kind = type(module)
    weight = module._parameters.get("weight")  # no ``nn.Module.__getattr__`` call
    if isinstance(weight, torch.Tensor) and weight.dtype != x.dtype:
        return None
    if kind in _SAME_SHAPE:
        return tuple(x.shape)
    if kind in _BATCH_NORMS:
        if x.dim() not in _BATCH_NORMS[kind]:
            return None
        if x.shape[1] != module.num_features:
            raise RuntimeError(f"running_mean should contain {x.shape[1]} elements not "
                               f"{module.num_features}")
        return tuple(x.shape)
    if kind is nn.LayerNorm:
        normalized = tuple(module.normalized_shape)
        if tuple(x.shape[x.dim() - len(normalized):]) != normalized:
            return None
        return tuple(x.shape)
    if kind is nn.Linear and x.dim() >= 1:
        if x.shape[-1] != module.in_features:
            rows = math.prod(x.shape[:-1])
            raise RuntimeError(f"mat1 and mat2 shapes cannot be multiplied ({rows}x{x.shape[-1]} "
                               f"and {module.in_features}x{module.out_features})")
        return (*x.shape[:-1], module.out_features)
    if kind in _CONVOLUTIONS:
        return _convolution(module, x, _CONVOLUTIONS[kind])
    if not x.is_floating_point():
        return None  # pooling kernels reject integers; meta kernels do not check
    if kind in _POOLS:
        return _pooling(module, x, _POOLS[kind])
    if kind in _ADAPTIVE_POOLS:
        return _adaptive_pooling(module, x, _ADAPTIVE_POOLS[kind])
    return None


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
    key = tuple((a.dtype, a.dim() == 0) if _is_meta(a) else type(a) for a in args)
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
    if not all(_is_meta(t) for t in (query, key, value)):
        return None
    if not (query.dim() == key.dim() == value.dim() >= 2 and query.shape[-1] == key.shape[-1]
            and key.shape[-2] == value.shape[-2] and query.dtype == key.dtype == value.dtype):
        return None
    return LazyMetaTensor((*query.shape[:-1], value.shape[-1]), query.dtype)


def _mean(args: tuple[Any, ...], kwargs: dict[str, Any]) -> LazyMetaTensor | None:
    """``x.mean(dim, keepdim=...)`` of a floating tensor."""
    if len(args) != 2 or set(kwargs) - {"keepdim"} or not _is_meta(args[0]) \
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
            or not all(_is_meta(t) for t in tensors):
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
    if not tensors or not all(_is_meta(t) for t in tensors):
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
    return fx.node.map_aggregate(arguments, _real)


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
        if len(args) == 1 and not kwargs and _is_meta(args[0]):
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
