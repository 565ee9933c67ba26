"""Values for the ``forward`` arguments whose annotations say they are no tensors, given as
literals beside the tensors (``InputsDecision.values``, JSON ``inputs.values``): a
feature pyramid's ``names: list[str]``, a decoder's ``image_size: list[int]``, a ``Literal``
mode, a flag (each a Python literal, as the JSON spells it). Only required arguments (no
default) are given one, and only where the annotation says the kind; an unannotated argument
stays a tensor's.

A sequence of ints is a size (``interpolate(size=image_size)``): it is tried with one value per
spatial dimension, for 2, 3 and 1 dimensions in turn (one set each, every such argument of a
set of one length); the inputs search runs once per set, and the first whose inputs the model
runs on is kept; last, once without literals, since an annotation may be loose (``t: int``
given a tensor of time steps).
"""

from __future__ import annotations

import collections.abc
import inspect
import types
import typing
from collections.abc import Mapping
from typing import Any

#: The spatial size given to each element of a size-like sequence, and the lengths tried.
SIZE = 32
SPATIAL_LENGTHS = (2, 3, 1)
#: The ints of a sequence within a sequence (a list of (H, W) sizes of levels, of (top,
#: left) offsets): small, so that several fit in one input's size.
ITEM_SIZE = 4
_SEQUENCES = (list, tuple, collections.abc.Sequence, collections.abc.MutableSequence)


class _NotLiteral(Exception):
    """The annotation names no literal kind (a tensor, a module, nothing)."""


def literal_sets(cls: type, given: Mapping[str, object]) -> list[dict[str, Any]]:
    """The literal values to try for ``forward``'s required arguments annotated with a
    literal kind, one dict per set (at most ``len(SPATIAL_LENGTHS)``); empty when there are
    none. Arguments ``given`` already (``concrete-args``, a tensor the graph inferred) are
    left as they are."""
    try:
        parameters = list(inspect.signature(cls.forward).parameters.values())[1:]
        hints = typing.get_type_hints(cls.forward)
    except Exception:  # an annotation that does not evaluate says nothing
        return []
    sets: list[dict[str, Any]] = []
    for length in SPATIAL_LENGTHS:
        values: dict[str, Any] = {}
        for parameter in parameters:
            if parameter.default is not inspect.Parameter.empty \
                    or parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD) \
                    or parameter.name in given or parameter.name not in hints:
                continue
            try:
                values[parameter.name] = _value(hints[parameter.name], length)
            except _NotLiteral:
                continue
        if values and values not in sets:
            sets.append(values)
    return sets


def spelled(values: dict[str, Any]) -> str:
    """``names=['0'], image_size=[32, 32]``: the literals as a note quotes them."""
    return ", ".join(f"{name}={value!r}" for name, value in values.items())


def _value(annotation: Any, length: int) -> Any:
    """A value of ``annotation``'s kind; ``_NotLiteral`` when it names none."""
    origin = typing.get_origin(annotation)
    arguments = typing.get_args(annotation)
    if origin is typing.Literal:
        return arguments[0]
    if origin in (typing.Union, types.UnionType):
        members = [a for a in arguments if a is not type(None)]
        if len(members) != 1:  # ``int | Sequence[int]``: which one forward takes is unknown
            raise _NotLiteral
        return _value(members[0], length)
    if origin in _SEQUENCES:
        return _sequence(origin, arguments, length, SIZE)
    if annotation is bool:
        return False
    if annotation in (int, float):
        return annotation(1)
    if annotation is str:
        return "0"
    raise _NotLiteral


def _sequence(origin: Any, arguments: tuple[Any, ...], length: int, size: int) -> Any:
    """A sequence of ``origin``'s kind: a tuple of fixed members one of each (``tuple[int,
    int]``: a pair), any other ``length`` items; ints and floats ``size``, and one item per
    element of a sequence of sequences, ``ITEM_SIZE`` in the inner ones
    (``list[tuple[int, int]]``: ``length`` pairs of small sizes); ``_NotLiteral`` where an
    element is no literal kind."""
    fixed = origin is tuple and bool(arguments) and arguments[-1] is not Ellipsis
    elements = list(arguments) if fixed else [arguments[0] if arguments else None] * length
    items = [_item(element, length, size) for element in elements]
    if not fixed and elements and isinstance(items[0], str):
        items = items[:1]  # one name: what a list of names is given
    return tuple(items) if origin is tuple else items


def _item(element: Any, length: int, size: int) -> Any:
    if element is str:
        return "0"
    if element in (int, float):
        return element(size)
    if typing.get_origin(element) in _SEQUENCES:
        return _sequence(typing.get_origin(element), typing.get_args(element), length,
                         ITEM_SIZE)
    raise _NotLiteral
