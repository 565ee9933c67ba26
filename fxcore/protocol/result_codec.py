"""The result dataclasses as JSON data and back, checked field by field.

What a worker child sends and what the result cache stores are both JSON, never pickles: a
worker runs workspace code, and a cache entry can be committed or restored by anyone. Decoding
walks the dataclasses' type hints (``fxcore.model.results``), so a value of the wrong type anywhere
(a string where a line number belongs, a dict where a list of failures belongs, an unknown or
missing field) is refused with ``InvalidResultData`` instead of surfacing later as a
``TypeError`` in the report.

Encoding is ``dataclasses.asdict``, except for fields of dictionaries with tuple keys
(``ModuleResult.line_nodes``), which JSON cannot key: they become ``[[*key, value], ...]``
rows.

Text is bounded both ways: every string (a message, a traceback, the repr of an argument, a
printed line, a dictionary key) is cut to ``MAX_TEXT_CHARACTERS``, or to the bound its field
declares (``field(metadata={TEXT_BOUND: ...})``: generated code), with a marker saying how
much was cut (``bounded_text``). A worker cuts what it sends; the engine cuts what it decodes,
which is the bound that holds, whatever a child sends: a ``RuntimeError("A" * 30_000_000)``
reaches no report, cache entry or editor whole.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import re
import types
from collections.abc import Callable
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

from fxcore.model.results import FileResult, ModuleResult

T = TypeVar("T")


class InvalidResultData(ValueError):
    """The data does not have the shape and types of the dataclass it should be."""


#: The most characters of one string of a result: far more than any message, traceback or
#: repr a user reads in an editor, far less than what workspace code can raise.
MAX_TEXT_CHARACTERS = 16 * 1024
#: The key of a dataclass field's metadata giving its own bound (a larger one).
TEXT_BOUND = "max_characters"


_CUT_MARKER = re.compile(r"… \[([0-9,]+) more characters cut by fx-lsp\]$")


def bounded_text(text: str, limit: int = MAX_TEXT_CHARACTERS) -> str:
    """``text``, or its first ``limit`` characters and a marker saying how many were cut. A
    text cut before (a message the worker cut, quoted in a longer one) keeps its marker, with
    the counts added."""
    if len(text) <= limit:
        return text
    already = _CUT_MARKER.search(text)
    cut_before = int(already[1].replace(",", "")) if already else 0
    body = text[:already.start()] if already else text
    if len(body) <= limit:
        return text
    return f"{body[:limit]}… [{len(body) - limit + cut_before:,} more characters cut by fx-lsp]"


def encode(value: Any) -> Any:
    """A result dataclass (or a list/dict of them) as JSON-ready data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _encoder_for(type(value))(value)
    if isinstance(value, dict):
        return {key: encode(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(item) for item in value]
    return value


Converter = Callable[[Any], Any]


def _identity(value: Any) -> Any:
    return value


@functools.cache
def _encoder_for(annotation: Any) -> Converter:
    """A function that encodes values of ``annotation``, built once per type: results carry
    hundreds of thousands of graph nodes, and looking types up per value would dominate."""
    origin = get_origin(annotation)
    if dataclasses.is_dataclass(annotation):
        bounds = _field_bounds(annotation)
        fields = [(name, _encoder_for(field_type) if name not in bounds
                   else functools.partial(_bounded_or_none, limit=bounds[name]))
                  for name, field_type in _field_types(annotation).items()]
        return lambda value: {name: encode_field(getattr(value, name))
                              for name, encode_field in fields}
    if annotation is str:
        return bounded_text
    if origin in (Union, types.UnionType):
        choices = [choice for choice in get_args(annotation) if choice is not type(None)]
        if len(choices) == 1:
            inner = _encoder_for(choices[0])
            return lambda value: None if value is None else inner(value)
        return encode
    if origin is list:
        item = _encoder_for(get_args(annotation)[0])
        if item is _identity:
            return list
        return lambda value: [item(element) for element in value]
    if origin is dict:
        key_type, value_type = get_args(annotation)
        inner = _encoder_for(value_type)
        if get_origin(key_type) is tuple:
            return lambda value: [[*key, inner(element)] for key, element in value.items()]
        return lambda value: {bounded_text(key): inner(element)
                              for key, element in value.items()}
    if annotation is Any:
        return encode
    return _identity


def dumps(value: Any) -> bytes:
    """``encode`` as UTF-8 JSON. Lone surrogates (from file names that are not UTF-8) are
    kept as JSON escapes rather than failing the encoding."""
    return json.dumps(encode(value), ensure_ascii=True, allow_nan=False).encode("ascii")


def _refuse_constant(name: str) -> Any:
    raise InvalidResultData(f"{name} is not a number")


def loads(data: bytes | str) -> Any:
    """JSON text as Python data; ``InvalidResultData`` for anything that is not strict JSON
    (NaN and infinities included) or is nested too deeply to parse."""
    try:
        return json.loads(data, parse_constant=_refuse_constant)
    except (ValueError, RecursionError, UnicodeDecodeError) as error:
        raise InvalidResultData(f"not JSON: {error}") from None


def decode(kind: type[T], data: Any) -> T:
    """Rebuild an instance of the dataclass ``kind`` from ``encode`` output, checking every
    field's type; ``InvalidResultData`` otherwise."""
    try:
        return _decoder_for(kind)(data)
    except _Mismatch as mismatch:
        raise InvalidResultData(f"{kind.__name__}{mismatch.where}: {mismatch.expected}") \
            from None
    except RecursionError:
        raise InvalidResultData(f"{kind.__name__}: nested too deeply") from None


def decode_file_result(data: Any) -> FileResult:
    return decode(FileResult, data)


def decode_module_result(data: Any) -> ModuleResult:
    return decode(ModuleResult, data)


class _Mismatch(Exception):
    """Raised inside a decoder; the path to the value is prepended on the way out."""

    def __init__(self, expected: str) -> None:
        super().__init__(expected)
        self.expected = expected
        self.where = ""

    def at(self, step: str) -> _Mismatch:
        self.where = step + self.where
        return self


@functools.cache
def _field_bounds(kind: type) -> dict[str, int]:
    """The fields of ``kind`` (``str`` or ``str | None``) that declare their own text bound."""
    return {field.name: field.metadata[TEXT_BOUND] for field in dataclasses.fields(kind)
            if TEXT_BOUND in field.metadata}


def _bounded_or_none(value: Any, limit: int) -> Any:
    return bounded_text(value, limit) if isinstance(value, str) else value


@functools.cache
def _field_types(kind: type) -> dict[str, Any]:
    hints = get_type_hints(kind)
    return {field.name: hints[field.name] for field in dataclasses.fields(kind) if field.init}


def _scalar(check: Callable[[Any], bool], expected: str,
            convert: Converter = _identity) -> Converter:
    def decode_scalar(data: Any) -> Any:
        if not check(data):
            raise _Mismatch(expected)
        return convert(data)
    return decode_scalar


_SCALARS: dict[Any, Converter] = {
    type(None): _scalar(lambda data: data is None, "expected null"),
    bool: _scalar(lambda data: type(data) is bool, "expected a boolean"),
    int: _scalar(lambda data: type(data) is int, "expected an integer"),
    str: _scalar(lambda data: type(data) is str, "expected a string", bounded_text),
    float: _scalar(lambda data: type(data) in (int, float) and math.isfinite(data),
                   "expected a finite number", float),
}


@functools.cache
def _decoder_for(annotation: Any) -> Converter:
    """A function that checks and rebuilds values of ``annotation``, built once per type."""
    origin = get_origin(annotation)
    if annotation is Any:
        return _identity
    if annotation in _SCALARS:
        return _SCALARS[annotation]
    if origin is Literal:
        choices = get_args(annotation)
        return _scalar(lambda data: any(type(data) is type(choice) and data == choice
                                        for choice in choices), f"not one of {choices}")
    if origin in (Union, types.UnionType):
        return _union_decoder([_decoder_for(choice) for choice in get_args(annotation)])
    if origin is list:
        return _list_decoder(_decoder_for(get_args(annotation)[0]))
    if origin is dict:
        key_type, value_type = get_args(annotation)
        if get_origin(key_type) is tuple:
            return _rows_decoder([_decoder_for(part) for part in get_args(key_type)],
                                 _decoder_for(value_type))
        if key_type is not str:
            raise TypeError(f"cannot decode dictionaries keyed by {key_type!r}")
        return _dict_decoder(_decoder_for(value_type))
    if dataclasses.is_dataclass(annotation):
        return _dataclass_decoder(annotation)
    raise TypeError(f"cannot decode values of type {annotation!r}")


def _union_decoder(choices: list[Converter]) -> Converter:
    def decode_union(data: Any) -> Any:
        expected = []
        for choice in choices:
            try:
                return choice(data)
            except _Mismatch as mismatch:
                expected.append(mismatch.where + " " + mismatch.expected
                                if mismatch.where else mismatch.expected)
        raise _Mismatch(" or ".join(expected))
    return decode_union


def _list_decoder(item: Converter) -> Converter:
    def decode_list(data: Any) -> list[Any]:
        if type(data) is not list:
            raise _Mismatch("expected a list")
        try:
            return [item(element) for element in data]
        except _Mismatch as mismatch:
            index = next(i for i, element in enumerate(data) if not _fits(item, element))
            raise mismatch.at(f"[{index}]") from None
    return decode_list


def _fits(decoder: Converter, data: Any) -> bool:
    try:
        decoder(data)
    except _Mismatch:
        return False
    return True


def _dict_decoder(value: Converter) -> Converter:
    def decode_dict(data: Any) -> dict[str, Any]:
        if type(data) is not dict:
            raise _Mismatch("expected an object")
        decoded = {}
        for key, element in data.items():
            try:
                decoded[bounded_text(key)] = value(element)
            except _Mismatch as mismatch:
                raise mismatch.at(f".{key}") from None
        return decoded
    return decode_dict


def _rows_decoder(parts: list[Converter], value: Converter) -> Converter:
    width = len(parts) + 1

    def decode_rows(data: Any) -> dict[tuple[Any, ...], Any]:
        if type(data) is not list:
            raise _Mismatch("expected a list of rows")
        decoded = {}
        for index, row in enumerate(data):
            if type(row) is not list or len(row) != width:
                raise _Mismatch(f"expected a row of {width}").at(f"[{index}]")
            try:
                key = tuple(part(element) for part, element in zip(parts, row, strict=False))
                decoded[key] = value(row[-1])
            except _Mismatch as mismatch:
                raise mismatch.at(f"[{index}]") from None
        return decoded
    return decode_rows


def _dataclass_decoder(kind: type) -> Converter:
    field_types = _field_types(kind)
    names = field_types.keys()
    decoders: list[tuple[str, Converter]] = []

    def decode_dataclass(data: Any) -> Any:
        if type(data) is not dict:
            raise _Mismatch("expected an object")
        if data.keys() != names:
            missing = sorted(names - data.keys())
            unknown = sorted(map(str, data.keys() - names))
            raise _Mismatch(f"missing fields {missing}, unknown fields {unknown}")
        if not decoders:  # built on first use: a field may have this very type
            bounds = _field_bounds(kind)
            decoders.extend((name, _decoder_for(annotation) if name not in bounds
                             else _bounded_field_decoder(annotation, bounds[name]))
                            for name, annotation in field_types.items())
        values = {}
        for name, decode_field in decoders:
            try:
                values[name] = decode_field(data[name])
            except _Mismatch as mismatch:
                raise mismatch.at(f".{name}") from None
        return kind(**values)
    return decode_dataclass


def _bounded_field_decoder(annotation: Any, limit: int) -> Converter:
    """The decoder of a ``str``/``str | None`` field with a bound of its own."""
    def decode_bounded(data: Any) -> Any:
        if type(data) is str:
            return bounded_text(data, limit)
        return _decoder_for(annotation)(data)
    return decode_bounded
