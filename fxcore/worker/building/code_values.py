"""Constructor values the class's own code names, for the parameters the name table has no value
for (``fxcore.worker.building.arguments``): a library's ``norm_name`` or ``act`` takes one of a
few strings, and ``None`` builds nothing. Read, in order, from:

- the annotation: a ``Literal["batch", "instance"]`` gives its values, an enum its members
  (inside a union too: ``Literal[...] | None``);
- the code that uses the parameter, in ``__init__`` and the functions it passes the parameter
  to (two calls deep, ``get_norm_layer(norm_name, ...)`` then ``split_args(name)``): the keys
  of a dict it is looked up in (``NORMS[norm_name]``, ``ACTS.get(act)``), the strings it is
  compared with (``if norm == "batch": ... elif norm == "instance"``, ``act in ("relu",
  "gelu")``), also through the names assigned from it (``name, args = split_args(norm)``);
- the docstrings of the class and its ``__init__``: the quoted words of the parameter's entry
  (``:param norm: one of 'batch', 'instance'``, Google's and numpy's ``norm: ...``).

Runs in the worker: it needs the imported class (its annotations evaluated, its enums, the
dicts its code reads), and reads the source of its functions with ``inspect``. Nothing is
called: values are read, and the constructor that is given them decides. The objects read are
the user's, and reading one runs its code (a library's optional-import stub raises its own
error for every attribute, not ``AttributeError``): an error there means "nothing to read",
never the worker's end (``user_attribute``, ``_guarded``).
"""

from __future__ import annotations

import ast
import enum
import inspect
import re
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from fxcore.worker.source.function_trees import function_tree
from fxcore.worker.source.user_objects import user_attribute

#: How many values are kept per parameter: the first is tried, the others where the
#: constructor rejects it (a ``"group"`` norm that also needs ``num_groups``).
MAX_VALUES = 3
#: How many calls deep the code is followed from ``__init__``.
CALL_DEPTH = 2
_QUOTED = re.compile(r"(['\"])([^'\"\s,]{1,40})\1")
_LITERAL_WORD = re.compile(r"``([A-Za-z_][\w-]{0,39})``")
#: The attribute a registry object keeps its entries in.
_REGISTRY_ATTRIBUTE = re.compile(r"_?(components|factories|registry|module_dict|obj_map|entries)")


def code_values(cls: type, name: str, annotation: Any) -> list[Any]:
    """The values ``cls``'s code names for its constructor parameter ``name``, most telling
    first; empty when it names none."""
    found = [*annotated_values(annotation)]
    init = user_attribute(cls, "__init__")
    if inspect.isfunction(init):
        found += _used_values(init, name, CALL_DEPTH, user_attribute(cls, "__dict__", {}))
    found += documented_values([user_attribute(cls, "__doc__"),
                                user_attribute(init, "__doc__")], name)
    unique: list[Any] = []
    # An empty string (``if name == "": return nn.Identity()``) leaves the layer out: last.
    for value in sorted(found, key=lambda value: value == ""):
        if not any(value is other or (type(value) is type(other) and value == other)
                   for other in unique):
            unique.append(value)
    return unique[:MAX_VALUES]


def annotated_values(annotation: Any) -> list[Any]:
    """The values of a ``Literal`` annotation, the members of an enum, inside a union too."""
    if annotation is None or isinstance(annotation, str):
        return []
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return [value for value in typing.get_args(annotation) if value is not None]
    if origin is typing.Union or origin is types.UnionType:
        return [value for member in typing.get_args(annotation)
                for value in annotated_values(member)]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return list(annotation)
    return []


def documented_values(docstrings: list[str | None], name: str) -> list[str]:
    """The quoted words of ``name``'s entry in ``docstrings`` (``:param name: one of 'a',
    'b'``; ``name (str): "a" or "b"``; ``name : str`` with the words on the lines below)."""
    entry = re.compile(rf"\s*(:param\s+(\w+\s+)?{re.escape(name)}\s*:|{re.escape(name)}\s*"
                       r"(\([^)]*\))?\s*:)(?P<rest>.*)")
    for docstring in docstrings:
        lines = inspect.cleandoc(docstring).splitlines() if docstring else []
        for index, line in enumerate(lines):
            match = entry.fullmatch(line)
            if match is None:
                continue
            indent = len(line) - len(line.lstrip())
            text = [match.group("rest")]
            for following in lines[index + 1:]:
                if following.strip() and len(following) - len(following.lstrip()) <= indent:
                    break
                text.append(following)
            described = " ".join(text)
            words = [word for _, word in _QUOTED.findall(described)]
            return words or _LITERAL_WORD.findall(described)
    return []


def _used_values(function: Callable[..., Any], name: str, depth: int,
                 attributes: Mapping[str, Any]) -> list[Any]:
    """The dict keys and compared strings ``function``'s code gives its parameter ``name``."""
    tree = function_tree(function)
    if tree is None:
        return []
    namespace = user_attribute(function, "__globals__", {})
    tracked = _aliases(tree, name)
    found: list[Any] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _mentions(node.slice, tracked):
            found += _guarded(lambda node=node: _keys(_resolved(node.value, namespace,
                                                                attributes)))
        elif isinstance(node, ast.Call):
            found += _guarded(lambda node=node: _from_call(node, tracked, namespace,
                                                           attributes, depth))
        elif isinstance(node, ast.Compare):
            found += _guarded(lambda node=node: _compared(node, tracked, namespace))
    return found


def _guarded(read: Callable[[], list[Any]]) -> list[Any]:
    """What ``read`` finds in the user's objects, or nothing when they raise on being read
    (``isinstance`` and ``hasattr`` run a class's ``__instancecheck__``, ``__getattr__``;
    ``list`` a mapping's ``__iter__``): one unreadable name loses its values, not the
    parameter's others, nor the worker."""
    try:
        return read()
    except Exception:
        return []




def _from_call(node: ast.Call, tracked: set[str], namespace: Mapping[str, Any],
               attributes: Mapping[str, Any], depth: int) -> list[Any]:
    """A lookup ``TABLE.get(name)``, or the values the called function gives the parameter it
    passes ``name`` to."""
    function = node.func
    if isinstance(function, ast.Attribute) and function.attr == "get" and node.args \
            and _mentions(node.args[0], tracked):
        return _keys(_resolved(function.value, namespace, attributes))
    if depth <= 0:
        return []
    called = _resolved(function, namespace, attributes)
    called = user_attribute(called, "__func__", called)
    # A class the parameter is passed to (``UnetBasicBlock(..., norm_name=norm_name)``): its
    # own ``__init__``, with the class's own attributes.
    bound = isinstance(called, type) or isinstance(function, ast.Attribute)
    if isinstance(called, type):
        attributes = user_attribute(called, "__dict__", {})
        called = user_attribute(called, "__init__")
    if not inspect.isfunction(called):
        return []
    try:
        parameters = [p.name for p in inspect.signature(called).parameters.values()]
    except (TypeError, ValueError):
        return []
    if bound and parameters[:1] in (["self"], ["cls"]):
        parameters = parameters[1:]
    passed = [parameters[index] for index, argument in enumerate(node.args)
              if index < len(parameters) and _mentions(argument, tracked)]
    passed += [keyword.arg for keyword in node.keywords
               if keyword.arg in parameters and _mentions(keyword.value, tracked)]
    return [value for parameter in passed
            for value in _used_values(called, parameter, depth - 1, attributes)]


def _compared(node: ast.Compare, tracked: set[str], namespace: Mapping[str, Any]
              ) -> list[str]:
    """The strings ``name == "batch"``, ``name != "batch"``, ``name in ("a", "b")`` or
    ``name not in NORMS`` (a module-level list, tuple, set or dict) names."""
    sides = [node.left, *node.comparators]
    if not any(_mentions(side, tracked) for side in sides) \
            or not all(isinstance(op, (ast.Eq, ast.NotEq, ast.In, ast.NotIn)) for op in node.ops):
        return []
    return [text for side in sides if not _mentions(side, tracked)
            for text in _strings(side, namespace)]


def _strings(node: ast.expr, namespace: Mapping[str, Any]) -> Iterator[str]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for item in node.elts:
            yield from _strings(item, namespace)
    elif isinstance(node, (ast.Name, ast.Attribute)):
        held = _resolved(node, namespace, {})
        if isinstance(held, (set, frozenset)):  # in an order of its own, not the hash's
            held = sorted(item for item in held if isinstance(item, str))
        if isinstance(held, (list, tuple, Mapping)):
            yield from (item for item in list(held)[:16] if isinstance(item, str))


def _keys(table: Any) -> list[Any]:
    """A mapping's string and enum keys, in order; a registry object's (MONAI's ``Norm``, a
    ``LayerFactory`` looked up as ``Norm[name, dims]``; mmcv's and detectron2's registries):
    those of the dict it keeps its entries in."""
    if not isinstance(table, Mapping):
        looked_up = user_attribute(table, "__getitem__") is not None \
            or user_attribute(table, "get") is not None
        held = user_attribute(table, "__dict__", {}) if looked_up else {}
        table = next((value for name, value in held.items()
                      if _REGISTRY_ATTRIBUTE.fullmatch(name) and isinstance(value, Mapping)),
                     {})
    return [key for key in list(table)[:16] if isinstance(key, (str, enum.Enum))]


def _resolved(node: ast.expr, namespace: Mapping[str, Any],
              attributes: Mapping[str, Any]) -> Any:
    """What a name (in the function's globals) or ``self.name``/``cls.name`` (the class's own
    attributes) is; None for anything else."""
    if isinstance(node, ast.Name):
        return namespace.get(node.id)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        if node.value.id in ("self", "cls"):
            return attributes.get(node.attr)
        owner = namespace.get(node.value.id)
        # A module's table or function (``norms.NORMS``), never a property run on access.
        if isinstance(owner, types.ModuleType):
            return user_attribute(owner, node.attr)
    return None


def _aliases(tree: ast.AST, name: str) -> set[str]:
    """``name`` and the local names assigned from an expression that uses it (``norm_name,
    args = split_args(norm)``, ``key = norm.lower()``), in one pass in source order."""
    tracked = {name}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None \
                and _mentions(node.value, tracked):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                tracked |= {element.id for element in ast.walk(target)
                            if isinstance(element, ast.Name)}
    return tracked


def _mentions(node: ast.AST, tracked: set[str]) -> bool:
    return any(isinstance(element, ast.Name) and element.id in tracked
               for element in ast.walk(node))


