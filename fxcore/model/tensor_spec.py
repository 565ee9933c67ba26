"""``"float32[2, 3, 224, 224]"``: a tensor's dtype and shape in one string, as configured under
``[tool.fx-lsp.modules."pkg.mod:Net"] inputs`` and as fx-lsp prints shapes. A dimension may
carry a name: ``"float32[batch=2, 3, h=224, w=224]"``. A batch word (``BATCH_WORDS``) or a
sequence word (``SEQUENCE_WORDS``: ``"int64[batch=2, seq=16]"``) says which dimension is the
batch or the sequence, which the export mode makes dynamic (FX407); other names document.
Pure: no torch."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

#: The dtypes a spec may name (torch's names, without ``torch.``).
DTYPES = frozenset({
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
    "int8", "int16", "int32", "int64", "uint8", "bool",
})
_SPEC = re.compile(r"\s*(\w+)\s*\[(.*)\]\s*")
_DIM = re.compile(r"\s*(?:(\w+)\s*=\s*)?(\d+)\s*")
#: Names of a batch dimension, in a spec, a documented shape or an annotation.
BATCH_WORDS = frozenset({"batch", "b", "n", "bs", "batch_size", "nb"})
#: Names of a sequence dimension (token ids' length, an RNN's time steps).
SEQUENCE_WORDS = frozenset({"seq", "seq_len", "seq_length", "sequence", "sequence_length",
                            "time", "timesteps", "time_steps", "length", "tokens",
                            "num_tokens"})


@dataclass(frozen=True)
class TensorSpec:
    """A tensor's dtype and shape, and which of its dimensions its source says is the batch
    or the sequence. Those roles are no part of the tensor: two specs of one dtype and shape
    are equal, and the text leaves the roles out."""

    dtype: str
    shape: tuple[int, ...]
    #: The sequence dimension, where the input's source says one is (an ``nn.Embedding``'s
    #: token ids, an RNN's or attention's input, a documented or configured ``seq``).
    sequence_dim: int | None = field(default=None, compare=False)
    #: The batch dimension, where the source names one; else ``batch_dim`` is the first
    #: dimension that is not the sequence.
    named_batch_dim: int | None = field(default=None, compare=False)

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join(map(str, self.shape))}]"

    @property
    def batch_dim(self) -> int:
        if self.named_batch_dim is not None:
            return self.named_batch_dim
        return 1 if self.sequence_dim == 0 else 0


def with_roles(dtype: str, shape: tuple[int, ...], names: Sequence[str | None]) -> TensorSpec:
    """The spec whose batch and sequence are the dimensions ``names`` (one a dimension, None
    for an unnamed one) calls so, when exactly one is."""
    words = [name.lower() if name else "" for name in names]

    def only(vocabulary: frozenset[str]) -> int | None:
        found = [index for index, word in enumerate(words) if word in vocabulary]
        return found[0] if len(found) == 1 else None

    return TensorSpec(dtype, shape, only(SEQUENCE_WORDS), only(BATCH_WORDS))


def parse_spec(text: str) -> TensorSpec:
    """The spec of ``text``; ``ValueError`` with what is wrong."""
    match = _SPEC.fullmatch(text)
    if match is None:
        raise ValueError(f"{text!r} is not a tensor such as \"float32[2, 3, 224, 224]\"")
    dtype, dims = match.group(1), match.group(2)
    if dtype not in DTYPES:
        raise ValueError(f"{text!r}: unknown dtype {dtype!r} (one of {', '.join(sorted(DTYPES))})")
    shape, names = [], []
    for dim in filter(str.strip, dims.split(",")):
        found = _DIM.fullmatch(dim)
        if found is None:
            raise ValueError(f"{text!r}: a dimension is a size such as 224, or name=224: "
                             f"{dim.strip()!r}")
        shape.append(int(found.group(2)))
        names.append(found.group(1))
    return with_roles(dtype, tuple(shape), names)
