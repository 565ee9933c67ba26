"""``"float32[2, 3, 224, 224]"``: a tensor's dtype and shape in one string, as configured under
``[tool.fx-lsp.modules."pkg.mod:Net"] inputs`` and as fx-lsp prints shapes. A dimension may
carry a name for documentation: ``"float32[batch=2, 3, h=224, w=224]"``. Pure: no torch."""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The dtypes a spec may name (torch's names, without ``torch.``).
DTYPES = frozenset({
    "float16", "bfloat16", "float32", "float64", "complex64", "complex128",
    "int8", "int16", "int32", "int64", "uint8", "bool",
})
_SPEC = re.compile(r"\s*(\w+)\s*\[(.*)\]\s*")
_DIM = re.compile(r"\s*(?:(\w+)\s*=\s*)?(\d+)\s*")


@dataclass(frozen=True)
class TensorSpec:
    dtype: str
    shape: tuple[int, ...]

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join(map(str, self.shape))}]"


def parse_spec(text: str) -> TensorSpec:
    """The spec of ``text``; ``ValueError`` with what is wrong."""
    match = _SPEC.fullmatch(text)
    if match is None:
        raise ValueError(f"{text!r} is not a tensor such as \"float32[2, 3, 224, 224]\"")
    dtype, dims = match.group(1), match.group(2)
    if dtype not in DTYPES:
        raise ValueError(f"{text!r}: unknown dtype {dtype!r} (one of {', '.join(sorted(DTYPES))})")
    shape = []
    for dim in filter(str.strip, dims.split(",")):
        found = _DIM.fullmatch(dim)
        if found is None:
            raise ValueError(f"{text!r}: a dimension is a size such as 224, or name=224: "
                             f"{dim.strip()!r}")
        shape.append(int(found.group(2)))
    return TensorSpec(dtype, tuple(shape))
