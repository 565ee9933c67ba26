"""Example inputs for a traced class, to propagate shapes with: configured, read from
jaxtyping-style annotations of ``forward``, or inferred from the traced graph. Runs in the
worker.

Inferred: each tensor argument's shape is decided by the first module (or function with a
weight) that consumes it, through shape-keeping operations such as activations, dropout and
elementwise arithmetic. ``INFERENCE_RULES`` is the table the README shows.
"""

from __future__ import annotations

import functools
import inspect
import operator
import re
from collections.abc import Callable
from typing import Any

import torch
from torch import fx, nn
from torch.nn import functional

from fxcore.tensor_spec import DTYPES, TensorSpec

#: The batch size, and the size of other free dimensions (sequence length, spatial sizes).
BATCH, LENGTH, SPATIAL = 2, 8, 32

#: (module types, the input it decides, in words): the README's table.
INFERENCE_RULES = [
    ("Conv1d/2d/3d, ConvTranspose1d/2d/3d",
     "float32[2, in_channels, 32(, 32(, 32))]; 2d: the model's img_size/image_size if any"),
    ("Linear (not LazyLinear)", "float32[2, 8, in_features]"),
    ("Embedding, EmbeddingBag", "int64[2, 8]"),
    ("LayerNorm", "float32[2, 8, *normalized_shape]"),
    ("BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d", "float32[2, num_features, 32(, 32(, 32))]"),
    ("GroupNorm", "float32[2, num_channels, 32, 32]"),
    ("MultiheadAttention", "float32[2, 8, embed_dim] (batch_first) or [8, 2, embed_dim]"),
    ("RNN, LSTM, GRU", "float32[2, 8, input_size] (batch_first) or [8, 2, input_size]"),
    ("TransformerEncoderLayer, TransformerDecoderLayer",
     "float32[2, 8, d_model] (batch_first) or [8, 2, d_model]"),
    ("F.linear, F.conv1d/2d/3d, F.embedding with a weight attribute", "as the module"),
]

_ACTIVATIONS = (nn.ReLU, nn.ReLU6, nn.GELU, nn.SiLU, nn.Sigmoid, nn.Tanh, nn.LeakyReLU, nn.ELU,
                nn.Mish, nn.Hardswish, nn.Hardsigmoid, nn.Softplus, nn.PReLU, nn.Identity,
                nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout)
_KEEPING_FUNCTIONS = {
    torch.relu, functional.relu, functional.gelu, functional.silu, torch.sigmoid, torch.tanh,
    functional.leaky_relu, functional.dropout, torch.dropout, functional.elu, functional.mish,
    operator.add, operator.sub, operator.mul, operator.truediv, operator.neg, torch.add,
    torch.mul, torch.sub, torch.clone, torch.nan_to_num, torch.abs,
}
_KEEPING_METHODS = {"relu", "float", "contiguous", "clone", "detach", "sigmoid", "tanh", "abs",
                    "add", "mul", "sub", "div", "type_as", "to", "requires_grad_", "neg"}
_DIMENSION_WORDS = {"batch": BATCH, "b": BATCH, "n": BATCH, "bs": BATCH}
_ANNOTATION = re.compile(
    r"(?P<kind>\w+)\[\s*[\w.]+\s*,\s*(?P<quote>['\"])(?P<dims>[^'\"]*)(?P=quote)\s*\]")
_JAXTYPING_DTYPES = {"Float": "float32", "Float32": "float32", "Float16": "float16",
                     "BFloat16": "bfloat16", "Float64": "float64", "Int": "int64",
                     "Integer": "int64", "Int64": "int64", "Int32": "int32", "Bool": "bool",
                     "Shaped": "float32", "Num": "float32", "Real": "float32",
                     "Inexact": "float32", "UInt8": "uint8"}


def _spatial(dimensions: int) -> tuple[int, ...]:
    return (SPATIAL,) * dimensions


def _sequence(batch_first: bool, size: int) -> tuple[int, ...]:
    return (BATCH, LENGTH, size) if batch_first else (LENGTH, BATCH, size)


def image_size(root: nn.Module) -> tuple[int, int] | None:
    """The image size a vision model declares (``img_size`` as in timm, ``image_size`` as in
    torchvision and Hugging Face configs): patch embeddings accept that size only."""
    for module in root.modules():
        # A module's own plain attributes live in its ``__dict__``; ``getattr`` of a missing
        # one goes through ``nn.Module.__getattr__`` and an exception, per module and name.
        attributes = vars(module)
        if not ("img_size" in attributes or "image_size" in attributes
                or "config" in attributes):
            continue  # most modules: three lookups rather than four ``getattr`` calls
        for owner in (attributes, attributes.get("config")):
            for name in ("img_size", "image_size"):
                value = (owner.get(name) if isinstance(owner, dict)
                         else getattr(owner, name, None))
                if isinstance(value, int) and not isinstance(value, bool):
                    return value, value
                if isinstance(value, (tuple, list)) and len(value) == 2 \
                        and all(isinstance(v, int) for v in value):
                    return value[0], value[1]
    return None


def _module_rule(module: nn.Module, image: Callable[[], tuple[int, int] | None]
                 ) -> TensorSpec | None:
    float32 = "float32"
    if isinstance(module, (nn.modules.conv._ConvNd)):
        dims = len(module.kernel_size)
        declared = image() if dims == 2 else None
        spatial = declared if declared is not None else _spatial(dims)
        return TensorSpec(float32, (BATCH, module.in_channels, *spatial))
    if isinstance(module, nn.Linear) and not isinstance(module, nn.LazyLinear):
        return TensorSpec(float32, (BATCH, LENGTH, module.in_features))
    if isinstance(module, (nn.Embedding, nn.EmbeddingBag)):
        return TensorSpec("int64", (BATCH, LENGTH))
    if isinstance(module, nn.LayerNorm):
        return TensorSpec(float32, (BATCH, LENGTH, *module.normalized_shape))
    norms = {nn.BatchNorm1d: 1, nn.BatchNorm2d: 2, nn.BatchNorm3d: 3, nn.InstanceNorm1d: 1,
             nn.InstanceNorm2d: 2, nn.InstanceNorm3d: 3}
    for kind, dims in norms.items():
        if type(module) is kind:
            return TensorSpec(float32, (BATCH, module.num_features, *_spatial(dims)))
    if isinstance(module, nn.GroupNorm):
        return TensorSpec(float32, (BATCH, module.num_channels, SPATIAL, SPATIAL))
    if isinstance(module, nn.MultiheadAttention):
        return TensorSpec(float32, _sequence(module.batch_first, module.embed_dim))
    if isinstance(module, nn.RNNBase):
        return TensorSpec(float32, _sequence(module.batch_first, module.input_size))
    if isinstance(module, (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)):
        size = module.linear1.in_features
        return TensorSpec(float32, _sequence(module.self_attn.batch_first, size))
    return None


def _weight(graph_module: fx.GraphModule, node: Any) -> torch.Tensor | None:
    if isinstance(node, fx.Node) and node.op == "get_attr":
        value = graph_module
        for part in str(node.target).split("."):
            value = getattr(value, part, None)
        return value if isinstance(value, torch.Tensor) else None
    return None


def _function_rule(graph_module: fx.GraphModule, node: fx.Node) -> TensorSpec | None:
    weight = _weight(graph_module, node.args[1] if len(node.args) > 1 else
                     node.kwargs.get("weight"))
    if weight is None:
        return None
    if node.target is functional.linear:
        return TensorSpec("float32", (BATCH, LENGTH, weight.shape[1]))
    convolutions = {functional.conv1d: 1, functional.conv2d: 2, functional.conv3d: 3}
    if node.target in convolutions:
        groups = node.kwargs.get("groups", node.args[6] if len(node.args) > 6 else 1)
        channels = weight.shape[1] * (groups if isinstance(groups, int) else 1)
        return TensorSpec("float32", (BATCH, channels, *_spatial(convolutions[node.target])))
    if node.target is functional.embedding:
        return TensorSpec("int64", (BATCH, LENGTH))
    return None


def _keeps_shape(graph_module: fx.GraphModule, node: fx.Node) -> bool:
    if node.op == "call_module":
        return isinstance(graph_module.get_submodule(str(node.target)), _ACTIVATIONS)
    if node.op == "call_function":
        return node.target in _KEEPING_FUNCTIONS
    return node.op == "call_method" and node.target in _KEEPING_METHODS


def _decide(graph_module: fx.GraphModule, placeholder: fx.Node,
            image: Callable[[], tuple[int, int] | None]) -> TensorSpec | None:
    """The first deciding consumer of ``placeholder``, through shape-keeping operations."""
    queue, seen = [placeholder], {placeholder}
    while queue:
        node = queue.pop(0)
        for user in node.users:
            if user in seen:
                continue
            seen.add(user)
            found = None
            if user.op == "call_module" and user.args and user.args[0] is node:
                found = _module_rule(graph_module.get_submodule(str(user.target)), image)
            elif user.op == "call_function" and user.args and user.args[0] is node:
                found = _function_rule(graph_module, user)
            if found is not None:
                return found
            if _keeps_shape(graph_module, user):
                queue.append(user)
    return None


def inferred(graph_module: fx.GraphModule, root: nn.Module | None = None
             ) -> tuple[dict[str, TensorSpec], str | None]:
    """Specs of the used placeholders, or ({}, why not). ``root`` is the traced instance,
    which keeps attributes of the modules traced through (``img_size``)."""
    # Looked up only when a 2d convolution decides: it walks every module.
    image = functools.cache(lambda: image_size(root if root is not None else graph_module))
    specs = {}
    for node in graph_module.graph.nodes:
        if node.op != "placeholder" or not node.users:
            continue
        spec = _decide(graph_module, node, image)
        if spec is None:
            first = next(iter(node.users))
            return {}, (f"nothing decides the shape of `{node.target}`: its first use "
                        f"(`{first.format_node()}`) is not a module or function whose input "
                        "size is known; give it under [tool.fx-lsp.modules] inputs")
        specs[str(node.target)] = spec
    return specs, None


def _annotation_spec(annotation: Any, sizes: dict[str, int]) -> TensorSpec | None:
    """``Float[Tensor, "batch 3 h w"]`` (a jaxtyping type or its source text)."""
    if isinstance(annotation, str):
        match = _ANNOTATION.fullmatch(annotation.strip())
        if match is None:
            return None
        kind, dims = match.group("kind"), match.group("dims")
    else:
        dims = getattr(annotation, "dim_str", None)
        kind = getattr(annotation, "__name__", "").split("[")[0]
        if not isinstance(dims, str):
            return None
    dtype = _JAXTYPING_DTYPES.get(kind)
    if dtype is None or dtype not in DTYPES:
        return None
    shape = []
    for word in dims.split():
        word = word.lstrip("*#_").split("=")[-1]
        if word == "...":
            continue
        if word.isdigit():
            shape.append(int(word))
            continue
        size = sizes.setdefault(word, _DIMENSION_WORDS.get(word.lower(), LENGTH))
        shape.append(size)
    return TensorSpec(dtype, tuple(shape))


def from_annotations(forward: Callable[..., Any]) -> dict[str, TensorSpec]:
    """Specs of the arguments whose annotation is jaxtyping-style; named dimensions get small
    sizes, the same name the same size."""
    try:
        parameters = inspect.signature(forward).parameters
    except (TypeError, ValueError):
        return {}
    sizes: dict[str, int] = {}
    specs = {}
    for name, parameter in parameters.items():
        if parameter.annotation is inspect.Parameter.empty:
            continue
        spec = _annotation_spec(parameter.annotation, sizes)
        if spec is not None:
            specs[name] = spec
    return specs
