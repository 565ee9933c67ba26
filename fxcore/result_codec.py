"""The result dataclasses as JSON data and back, checked field by field.

What a worker child sends and what the result cache stores are both JSON, never pickles: a
worker runs workspace code, and a cache entry can be committed or restored by anyone. Decoding
walks the dataclasses' type hints (``fxcore.results``), so a value of the wrong type anywhere
(a string where a line number belongs, a dict where a list of failures belongs, an unknown or
missing field) is refused with ``InvalidResultData`` instead of surfacing later as a
``TypeError`` in the report.

Encoding is ``dataclasses.asdict``, except for fields of dictionaries with tuple keys
(``ModuleResult.line_nodes``), which JSON cannot key: they become ``[[*key, value], ...]``
rows.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import types
from typing import Any, Literal, TypeVar, Union, get_args, get_origin, get_type_hints

from fxcore.results import FileResult, ModuleResult

T = TypeVar("T")


class InvalidResultData(ValueError):
    """The data does not have the shape and types of the dataclass it should be."""


def encode(value: Any) -> Any:
    """A result dataclass (or a list/dict of them) as JSON-ready data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        types_of = _field_types(type(value))
        return {name: _encode_field(getattr(value, name), annotation)
                for name, annotation in types_of.items()}
    if isinstance(value, dict):
        return {key: encode(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(item) for item in value]
    return value


def _encode_field(value: Any, annotation: Any) -> Any:
    if get_origin(annotation) is dict and get_origin(get_args(annotation)[0]) is tuple:
        return [[*key, encode(item)] for key, item in value.items()]
    return encode(value)


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
        return _decode(kind, data, kind.__name__)
    except RecursionError:
        raise InvalidResultData(f"{kind.__name__}: nested too deeply") from None


def decode_file_result(data: Any) -> FileResult:
    return decode(FileResult, data)


def decode_module_result(data: Any) -> ModuleResult:
    return decode(ModuleResult, data)


@functools.cache
def _field_types(kind: type) -> dict[str, Any]:
    hints = get_type_hints(kind)
    return {field.name: hints[field.name] for field in dataclasses.fields(kind) if field.init}


def _decode(annotation: Any, data: Any, where: str) -> Any:
    origin = get_origin(annotation)
    if annotation is Any:
        return data
    if annotation is type(None):
        if data is not None:
            raise InvalidResultData(f"{where}: expected null")
        return None
    if annotation is bool:
        if not isinstance(data, bool):
            raise InvalidResultData(f"{where}: expected a boolean")
        return data
    if annotation is int:
        if isinstance(data, bool) or not isinstance(data, int):
            raise InvalidResultData(f"{where}: expected an integer")
        return data
    if annotation is float:
        if isinstance(data, bool) or not isinstance(data, (int, float)) \
                or not math.isfinite(data):
            raise InvalidResultData(f"{where}: expected a finite number")
        return float(data)
    if annotation is str:
        if not isinstance(data, str):
            raise InvalidResultData(f"{where}: expected a string")
        return data
    if origin is Literal:
        if not any(type(data) is type(choice) and data == choice
                   for choice in get_args(annotation)):
            raise InvalidResultData(f"{where}: not one of {get_args(annotation)}")
        return data
    if origin in (Union, types.UnionType):
        errors = []
        for choice in get_args(annotation):
            try:
                return _decode(choice, data, where)
            except InvalidResultData as error:
                errors.append(str(error))
        raise InvalidResultData("; ".join(errors))
    if origin is list:
        (item,) = get_args(annotation)
        if not isinstance(data, list):
            raise InvalidResultData(f"{where}: expected a list")
        return [_decode(item, value, f"{where}[{index}]") for index, value in enumerate(data)]
    if origin is dict:
        key_type, value_type = get_args(annotation)
        if get_origin(key_type) is tuple:
            return _decode_tuple_keyed(key_type, value_type, data, where)
        if key_type is not str or not isinstance(data, dict):
            raise InvalidResultData(f"{where}: expected an object")
        return {key: _decode(value_type, value, f"{where}.{key}") for key, value in data.items()}
    if dataclasses.is_dataclass(annotation):
        return _decode_dataclass(annotation, data, where)
    raise InvalidResultData(f"{where}: cannot check values of type {annotation!r}")


def _decode_dataclass(kind: type, data: Any, where: str) -> Any:
    if not isinstance(data, dict):
        raise InvalidResultData(f"{where}: expected an object")
    fields = _field_types(kind)
    if data.keys() != fields.keys():
        missing = sorted(fields.keys() - data.keys())
        unknown = sorted(map(str, data.keys() - fields.keys()))
        raise InvalidResultData(f"{where}: missing fields {missing}, unknown fields {unknown}")
    return kind(**{name: _decode(annotation, data[name], f"{where}.{name}")
                   for name, annotation in fields.items()})


def _decode_tuple_keyed(key_type: Any, value_type: Any, data: Any, where: str) -> dict:
    parts = get_args(key_type)
    if not isinstance(data, list):
        raise InvalidResultData(f"{where}: expected a list of rows")
    decoded = {}
    for index, row in enumerate(data):
        if not isinstance(row, list) or len(row) != len(parts) + 1:
            raise InvalidResultData(f"{where}[{index}]: expected a row of {len(parts) + 1}")
        key = tuple(_decode(part, value, f"{where}[{index}]")
                    for part, value in zip(parts, row, strict=False))
        decoded[key] = _decode(value_type, row[-1], f"{where}[{index}]")
    return decoded
