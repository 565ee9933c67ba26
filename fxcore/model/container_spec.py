"""A ``forward`` argument that is a container of tensors: a dict of them by name (a feature
pyramid's levels, ``{'p3': float32[2, 8, 32, 32], 'p4': float32[2, 8, 16, 16]}``), a list
(``[float32[2, 8, 32, 32], float32[2, 16, 16, 16]]``) or a tuple (``(float32[2, 8],
float32[2, 8])``). Spelled as Python spells the container, each tensor as a ``TensorSpec``; one
level deep, as torch.export takes such an argument as a pytree of its tensors. Pure: no
torch."""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

from fxcore.model.tensor_spec import TensorSpec, parse_spec

ContainerKind = Literal["dict", "list", "tuple"]
_Leaf = TypeVar("_Leaf")
#: One tensor spec inside a container's spelling, turned into a string to read it with ``ast``.
_SPEC_IN_CONTAINER = re.compile(r"(\w+\s*\[[^\[\]]*\])")


@dataclass(frozen=True)
class ContainerSpec:
    """A dict, list or tuple of tensors; a list's or tuple's keys are their positions."""

    kind: ContainerKind
    items: tuple[tuple[str, TensorSpec], ...]

    def __str__(self) -> str:
        if self.kind == "dict":
            return "{" + ", ".join(f"{key!r}: {spec}" for key, spec in self.items) + "}"
        inner = ", ".join(str(spec) for _, spec in self.items)
        if self.kind == "list":
            return f"[{inner}]"
        return f"({inner},)" if len(self.items) == 1 else f"({inner})"

    @property
    def leaves(self) -> list[TensorSpec]:
        return [spec for _, spec in self.items]

    def built(self, make: Callable[[TensorSpec], _Leaf]) -> Any:
        """The container with ``make(spec)`` for each of its tensors."""
        if self.kind == "dict":
            return {key: make(spec) for key, spec in self.items}
        made = [make(spec) for _, spec in self.items]
        return made if self.kind == "list" else tuple(made)


InputSpec = TensorSpec | ContainerSpec


def parse_input(text: str) -> InputSpec:
    """A tensor spec, or a container of them; ``ValueError`` with what is wrong."""
    stripped = text.strip()
    if stripped[:1] not in ("{", "[", "("):
        return parse_spec(stripped)
    try:
        literal = ast.literal_eval(_SPEC_IN_CONTAINER.sub(lambda m: repr(m.group(1)), stripped))
    except (ValueError, SyntaxError) as error:
        raise ValueError(f"{text!r} is not a dict, list or tuple of tensors such as "
                         "\"{'p3': float32[2, 8, 32, 32]}\"") from error
    if isinstance(literal, dict):
        return ContainerSpec("dict", tuple((str(key), _leaf(text, value))
                                           for key, value in literal.items()))
    if isinstance(literal, (list, tuple)):
        return ContainerSpec("list" if isinstance(literal, list) else "tuple",
                             tuple((str(index), _leaf(text, value))
                                   for index, value in enumerate(literal)))
    raise ValueError(f"{text!r} is not a tensor, nor a dict, list or tuple of tensors")


def _leaf(text: str, value: object) -> TensorSpec:
    if not isinstance(value, str):
        raise ValueError(f"{text!r}: {value!r} is not a tensor such as float32[2, 8]")
    return parse_spec(value)


def materialized(spec: InputSpec, make: Callable[[TensorSpec], _Leaf]) -> Any:
    """``make(spec)`` for a tensor spec, the container of them for a container."""
    return spec.built(make) if isinstance(spec, ContainerSpec) else make(spec)
