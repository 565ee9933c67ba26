"""Example inputs for a traced class, to propagate shapes with: configured, read from
jaxtyping-style annotations of ``forward``, or inferred from the traced graph. Runs in the
worker.

Inferred: each tensor argument's shape is decided by the first module (or function with a
weight) that consumes it, through shape-keeping operations such as activations, dropout and
elementwise arithmetic. ``INFERENCE_RULES`` is the table docs/inputs.md shows. The sizes those
layers leave free (an image's height and width, a sequence's length) stay marks in an
``InputTemplate``: ``sizes`` gives them the sizes the model declares or accepts. Where the
layer says the mark is a sequence (token ids to an ``Embedding``, an RNN's or attention's
input), the spec says which dimension it is (``TensorSpec.sequence_dim``); a ``Linear``'s
leading dimensions say nothing of what they are.
"""

from __future__ import annotations

import inspect
import operator
import re
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import fx, nn
from torch.nn import functional

from fxcore.model.tensor_spec import DTYPES, TensorSpec, with_roles

#: The batch size, and the default size of other free dimensions (sequence length, spatial
#: sizes): the first sizes tried, before those the model declares or its constraints need
#: (``fxcore.worker.inputs.from_layers.sizes``).
BATCH, LENGTH, SPATIAL = 2, 8, 32

#: Marks of the dimensions an inferred input leaves free, in ``InputTemplate.dims``: the height
#: and width of an image (a 2d convolution's or norm's input, a 3d one's last two), the depth
#: of a 3d input, the length of a 1d one, a sequence length.
HEIGHT, WIDTH, DEPTH, SIGNAL, SEQUENCE = "height", "width", "depth", "signal", "sequence"
#: The kind of free size each mark is.
FREE_KINDS = {HEIGHT: "image", WIDTH: "image", DEPTH: "depth", SIGNAL: "signal",
              SEQUENCE: "sequence"}

#: (module types, the input it decides, in words): docs/inputs.md's table.
INFERENCE_RULES = [
    ("Conv1d/2d/3d, ConvTranspose1d/2d/3d",
     "float32[2, in_channels, 32(, 32(, 32))]; height, width: the size the model declares"),
    ("Linear (not LazyLinear)",
     "float32[2, 8, in_features]; [2, in_features] next to a BatchNorm1d"),
    ("Embedding, EmbeddingBag", "int64[2, 8]"),
    ("LayerNorm", "float32[2, 8, *normalized_shape]"),
    ("BatchNorm1d/2d/3d, InstanceNorm1d/2d/3d",
     "float32[2, num_features, 32(, 32(, 32))]; 1d: [2, num_features] next to a Linear"),
    ("GroupNorm", "float32[2, num_channels, 32, 32]"),
    ("MultiheadAttention", "float32[2, 8, embed_dim] (batch_first) or [8, 2, embed_dim]"),
    ("RNN, LSTM, GRU", "float32[2, 8, input_size] (batch_first) or [8, 2, input_size]"),
    ("TransformerEncoderLayer, TransformerDecoderLayer",
     "float32[2, 8, d_model] (batch_first) or [8, 2, d_model]"),
    ("F.linear, F.conv1d/2d/3d, F.embedding with a weight attribute", "as the module"),
]

#: Attributes in which a model declares the image size it takes: an int, (height, width) or
#: (channels, height, width) (timm's ``img_size``, torchvision's and Hugging Face's
#: ``image_size``, pytorchcv's ``in_size``, ``input_size``).
DECLARING_ATTRIBUTES = ("img_size", "image_size", "in_size", "input_size")
#: timm's model configuration dicts, whose ``input_size`` is (channels, height, width).
TIMM_CONFIGS = ("pretrained_cfg", "default_cfg")
_DECLARING = frozenset((*DECLARING_ATTRIBUTES, *TIMM_CONFIGS, "config"))

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


@dataclass(frozen=True)
class FreeSizes:
    """The sizes given to the free dimensions of inferred inputs."""

    image: tuple[int, int] = (SPATIAL, SPATIAL)
    depth: int = SPATIAL
    signal: int = SPATIAL
    sequence: int = LENGTH

    def of(self, mark: str) -> int:
        return {HEIGHT: self.image[0], WIDTH: self.image[1], DEPTH: self.depth,
                SIGNAL: self.signal, SEQUENCE: self.sequence}[mark]

    def describe(self, kinds: set[str]) -> str:
        """``64x64``, ``32x224x224``, ``sequence length 16``: the sizes of ``kinds``."""
        words = []
        if "image" in kinds:
            image = "x".join(map(str, self.image))
            words.append(f"{self.depth}x{image}" if "depth" in kinds else image)
        if "signal" in kinds:
            words.append(f"length {self.signal}")
        if "sequence" in kinds:
            words.append(f"sequence length {self.sequence}")
        return ", ".join(words)


@dataclass(frozen=True)
class InputTemplate:
    """An inferred input whose free dimensions are marks (``HEIGHT``...), not sizes."""

    dtype: str
    dims: tuple[int | str, ...]
    #: The layer takes the ``SEQUENCE`` mark as a sequence (not a ``Linear``'s any leading
    #: dimension): the spec says which dimension it is.
    sequence_known: bool = False

    def spec(self, sizes: FreeSizes) -> TensorSpec:
        sequence = self.dims.index(SEQUENCE) \
            if self.sequence_known and SEQUENCE in self.dims else None
        return TensorSpec(self.dtype, tuple(sizes.of(d) if isinstance(d, str) else d
                                            for d in self.dims), sequence)

    @property
    def free_kinds(self) -> set[str]:
        return {FREE_KINDS[d] for d in self.dims if isinstance(d, str)}


@dataclass(frozen=True)
class DeclaredSize:
    """The image size a model declares, and where."""

    image: tuple[int, int]
    channels: int | None
    #: ``model.in_size = (299, 299)``: the attribute and its value.
    source: str


def _spatial(dimensions: int) -> tuple[str, ...]:
    return {1: (SIGNAL,), 2: (HEIGHT, WIDTH), 3: (DEPTH, HEIGHT, WIDTH)}[dimensions]


def _sequence(batch_first: bool, size: int) -> InputTemplate:
    """The input of a layer that takes a sequence, batch first or sequence first."""
    return InputTemplate("float32", (BATCH, SEQUENCE, size) if batch_first
                         else (SEQUENCE, BATCH, size), sequence_known=True)


def _size_value(value: Any) -> tuple[tuple[int, int], int | None] | None:
    """((height, width), channels) of an int, (h, w) or (c, h, w); None for anything else."""
    if isinstance(value, (tuple, list)) and len(value) in (2, 3) \
            and all(type(v) is int and v > 0 for v in value):
        return (value[-2], value[-1]), (value[0] if len(value) == 3 else None)
    if type(value) is int and value > 0:
        return (value, value), None
    return None


def _declared_here(prefix: str, attributes: dict[str, Any]) -> DeclaredSize | None:
    for name in DECLARING_ATTRIBUTES:
        found = _size_value(attributes.get(name))
        if found is not None:
            return DeclaredSize(*found, f"`{prefix}{name} = {attributes[name]!r}`")
    config = attributes.get("config")  # Hugging Face: the model's config object
    if config is not None and not isinstance(config, dict):
        for name in ("img_size", "image_size"):
            value = getattr(config, name, None)
            found = _size_value(value)
            if found is not None:
                return DeclaredSize(*found, f"`{prefix}config.{name} = {value!r}`")
    for name in TIMM_CONFIGS:
        config = attributes.get(name)
        value = config.get("input_size") if isinstance(config, dict) else None
        found = _size_value(value)
        if found is not None:
            return DeclaredSize(*found, f"`{prefix}{name}['input_size'] = {value!r}`")
    return None


def declared_size(root: nn.Module) -> DeclaredSize | None:
    """The image size a vision model declares, nearest the root first (a wrapper's own, then
    its children's, level by level). torch's own layers are skipped: an RNN's ``input_size``
    is a feature count."""
    queue, seen = deque([("", root)]), {id(root)}
    while queue:
        prefix, module = queue.popleft()
        # A module's own plain attributes live in its ``__dict__``; ``getattr`` of a missing
        # one goes through ``nn.Module.__getattr__`` and an exception, per module and name.
        attributes = vars(module)
        if not _DECLARING.isdisjoint(attributes) \
                and not type(module).__module__.startswith("torch."):
            found = _declared_here(prefix, attributes)
            if found is not None:
                return found
        for name, child in module._modules.items():
            if child is not None and id(child) not in seen:
                seen.add(id(child))
                queue.append((f"{prefix}{name}.", child))
    return None


def layer_template(module: nn.Module) -> InputTemplate | None:
    float32 = "float32"
    if isinstance(module, (nn.modules.conv._ConvNd)):
        return InputTemplate(float32, (BATCH, module.in_channels,
                                       *_spatial(len(module.kernel_size))))
    if isinstance(module, nn.Linear) and not isinstance(module, nn.LazyLinear):
        return InputTemplate(float32, (BATCH, SEQUENCE, module.in_features))
    if isinstance(module, (nn.Embedding, nn.EmbeddingBag)):
        return InputTemplate("int64", (BATCH, SEQUENCE), sequence_known=True)
    if isinstance(module, nn.LayerNorm):
        return InputTemplate(float32, (BATCH, SEQUENCE, *module.normalized_shape))
    norms = {nn.BatchNorm1d: 1, nn.BatchNorm2d: 2, nn.BatchNorm3d: 3, nn.InstanceNorm1d: 1,
             nn.InstanceNorm2d: 2, nn.InstanceNorm3d: 3}
    for kind, dims in norms.items():
        if type(module) is kind:
            return InputTemplate(float32, (BATCH, module.num_features, *_spatial(dims)))
    if isinstance(module, nn.GroupNorm):
        return InputTemplate(float32, (BATCH, module.num_channels, *_spatial(2)))
    if isinstance(module, nn.MultiheadAttention):
        return _sequence(module.batch_first, module.embed_dim)
    if isinstance(module, nn.RNNBase):
        return _sequence(module.batch_first, module.input_size)
    if isinstance(module, (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)):
        return _sequence(module.self_attn.batch_first, module.linear1.in_features)
    return None


def _weight(graph_module: fx.GraphModule, node: Any) -> torch.Tensor | None:
    if isinstance(node, fx.Node) and node.op == "get_attr":
        value = graph_module
        for part in str(node.target).split("."):
            value = getattr(value, part, None)
        return value if isinstance(value, torch.Tensor) else None
    return None


def _function_rule(graph_module: fx.GraphModule, node: fx.Node) -> InputTemplate | None:
    weight = _weight(graph_module, node.args[1] if len(node.args) > 1 else
                     node.kwargs.get("weight"))
    if weight is None:
        return None
    if node.target is functional.linear:
        return InputTemplate("float32", (BATCH, SEQUENCE, weight.shape[1]))
    convolutions = {functional.conv1d: 1, functional.conv2d: 2, functional.conv3d: 3}
    if node.target in convolutions:
        groups = node.kwargs.get("groups", node.args[6] if len(node.args) > 6 else 1)
        channels = weight.shape[1] * (groups if isinstance(groups, int) else 1)
        return InputTemplate("float32", (BATCH, channels, *_spatial(convolutions[node.target])))
    if node.target is functional.embedding:
        return InputTemplate("int64", (BATCH, SEQUENCE), sequence_known=True)
    return None


def _keeps_shape(graph_module: fx.GraphModule, node: fx.Node) -> bool:
    if node.op == "call_module":
        return isinstance(graph_module.get_submodule(str(node.target)), _ACTIVATIONS)
    if node.op == "call_function":
        return node.target in _KEEPING_FUNCTIONS
    return node.op == "call_method" and node.target in _KEEPING_METHODS


def _uses(graph_module: fx.GraphModule, start: fx.Node) -> Iterator[tuple[fx.Node, fx.Node]]:
    """(value, user) for each node that uses ``start``, or a value made from it by
    shape-keeping operations, once each, nearest first."""
    queue, seen = [start], {start}
    while queue:
        value = queue.pop(0)
        for user in value.users:
            if user not in seen:
                seen.add(user)
                yield value, user
                if _keeps_shape(graph_module, user):
                    queue.append(user)


def _consuming_modules(graph_module: fx.GraphModule, node: fx.Node) -> list[nn.Module]:
    """The modules that take ``node`` (through shape-keeping operations) as their input."""
    return [graph_module.get_submodule(str(user.target))
            for value, user in _uses(graph_module, node)
            if not _keeps_shape(graph_module, user) and user.op == "call_module"
            and user.args and user.args[0] is value]


def _features_only(graph_module: fx.GraphModule, value: fx.Node, layer: fx.Node,
                   module: nn.Module) -> int | None:
    """The feature count of a ``Linear`` or ``BatchNorm1d`` whose input is [batch, features]
    only: a ``BatchNorm1d`` next to a ``Linear`` (either feeding the other, or both taking
    the same value) normalises features, and takes a sequence as [batch, features, length]
    where a ``Linear`` takes it as [batch, length, features]."""
    linear = isinstance(module, nn.Linear) and not isinstance(module, nn.LazyLinear)
    if not linear and type(module) is not nn.BatchNorm1d:
        return None
    beside = [m for m in _consuming_modules(graph_module, value)
              if m is not module]  # ``layer``'s siblings take its input
    after = _consuming_modules(graph_module, layer)
    if linear:
        normed = any(type(m) is nn.BatchNorm1d and m.num_features == module.in_features
                     for m in beside) or any(type(m) is nn.BatchNorm1d
                                             and m.num_features == module.out_features
                                             for m in after)
        return module.in_features if normed else None
    projected = any(isinstance(m, nn.Linear) and not isinstance(m, nn.LazyLinear)
                    and m.in_features == module.num_features for m in (*beside, *after))
    return module.num_features if projected else None


def _decide(graph_module: fx.GraphModule, placeholder: fx.Node) -> InputTemplate | None:
    """The first deciding consumer of ``placeholder``, through shape-keeping operations."""
    for node, user in _uses(graph_module, placeholder):
        found = None
        if user.op == "call_module" and user.args and user.args[0] is node:
            module = graph_module.get_submodule(str(user.target))
            found = layer_template(module)
            features = (_features_only(graph_module, node, user, module)
                        if found is not None else None)
            if features is not None:
                found = InputTemplate("float32", (BATCH, features))
        elif user.op == "call_function" and user.args and user.args[0] is node:
            found = _function_rule(graph_module, user)
        if found is not None:
            return found
    return None


def inferred(graph_module: fx.GraphModule) -> tuple[dict[str, InputTemplate], str | None]:
    """Templates of the used placeholders (their free sizes left as marks), or ({}, why
    not)."""
    templates = {}
    for node in graph_module.graph.nodes:
        if node.op != "placeholder" or not node.users:
            continue
        template = _decide(graph_module, node)
        if template is None:
            first = next(iter(node.users))
            return {}, (f"nothing decides the shape of `{node.target}`: its first use "
                        f"(`{first.format_node()}`) is not a module or function whose input "
                        "size is known; give it under [tool.fx-lsp.modules] inputs")
        templates[str(node.target)] = template
    return templates, None


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
    shape, names = [], []
    for word in dims.split():
        word = word.lstrip("*#_").split("=")[-1]
        if word == "...":
            continue
        names.append(word)
        if word.isdigit():
            shape.append(int(word))
            continue
        size = sizes.setdefault(word, _DIMENSION_WORDS.get(word.lower(), LENGTH))
        shape.append(size)
    return with_roles(dtype, tuple(shape), names)


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
