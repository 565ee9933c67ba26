"""Constructor values of the kind a parameter's annotation or use says, where the name table
(``fxcore.worker.building.arguments``) would give another kind:

- ``Sequence[int]``, ``tuple[int, ...]``, ``list[int]`` a tuple of ints (with ``| int`` the
  int stays first and the tuple is the next value);
- ``Callable`` (returning no module) ``torch.nn.functional.relu``, a function that keeps the
  shape of the tensor it is given;
- ``nn.Module`` a small real module whose input and output fit the arguments beside it, shape
  preserving: ``Conv2d(c, c, 1)`` of a channel argument ``c``, ``Linear(d, d)`` of a width;
  ``Sequence[nn.Module]`` two of them;
- a parameter that ``__init__`` calls with arguments (``block(in_channels, out_channels)``),
  or one annotated ``Callable[..., nn.Module]``/``type[nn.Module]``, a torch module class that
  takes those arguments (``functools.partial(nn.Conv2d, kernel_size=1)``, ``nn.Linear``,
  ``nn.BatchNorm2d``), else ``nn.Identity``.

Every value made here is made from Python source, which is kept (``made_source``) so that the
report's arguments rebuild it (``fxcore.worker.building.arguments.value_source``).
"""

from __future__ import annotations

import ast
import collections.abc
import inspect
import re
import typing
from typing import Any

import torch

from fxcore.worker.source.function_trees import function_tree

#: Parameters whose value is a number of channels, and those whose value is a width.
CHANNEL_NAMES = re.compile(r"(\w+_)?(channels?|chans|chs|ch|planes|filters|c)")
WIDTH_NAMES = re.compile(r"(\w+_)?(dim|features|hidden_size|hidden|d_model|n_embd|width)")
#: Parameters that give the number of spatial dimensions (``Conv3d`` for 3).
_SPATIAL_NAMES = re.compile(r"spatial_dims?|n_?dims|ndims?|num_spatial_dims|dimensions")
_SEQUENCES = {tuple, list, collections.abc.Sequence, collections.abc.Iterable,
              collections.abc.Collection, collections.abc.MutableSequence}

#: The values made here, by id, with the source that makes them again (kept alive with it).
_MADE: dict[int, tuple[Any, str]] = {}


def made(source: str) -> Any:
    """The value ``source`` (torch and functools only) evaluates to, its source kept."""
    with torch.device("meta"):  # no real memory for weights
        value = eval(source, {"__builtins__": __builtins__})  # fx-lsp's own source text
    _MADE[id(value)] = (value, source)
    return value


def made_source(value: Any) -> str | None:
    """The source of a value ``made`` made; None for any other."""
    kept = _MADE.get(id(value))
    return kept[1] if kept is not None and kept[0] is value else None


def union_members(annotation: Any) -> list[Any]:
    origin = typing.get_origin(annotation)
    if origin is typing.Union or type(annotation).__name__ == "UnionType":
        return [member for member in typing.get_args(annotation) if member is not type(None)]
    return [annotation]


def sequence_element(annotation: Any) -> tuple[Any, bool] | None:
    """``(element type, a single value is allowed too)`` for a sequence annotation
    (``Sequence[int] | int`` gives ``(int, True)``); None for any other."""
    members = union_members(annotation)
    for member in members:
        origin = typing.get_origin(member) or member
        if origin in _SEQUENCES and member is not str:
            arguments = [a for a in typing.get_args(member) if a is not Ellipsis]
            element = arguments[0] if arguments else Any
            return element, any(typing.get_origin(m) is None and m not in _SEQUENCES
                                for m in members if m is not member)
    return None


def is_module_annotation(annotation: Any) -> bool:
    """True for ``nn.Module`` itself, or a subclass of it that has no ``forward`` of its own:
    an instance of the class named would be no model."""
    return isinstance(annotation, type) and issubclass(annotation, torch.nn.Module) \
        and annotation.forward is torch.nn.Module.forward


def is_factory_annotation(annotation: Any) -> bool:
    """True for ``Callable[..., nn.Module]``, ``type[nn.Module]`` and ``Type[...]``."""
    for member in union_members(annotation):
        origin = typing.get_origin(member)
        arguments = typing.get_args(member)
        returned = arguments[-1] if origin is collections.abc.Callable and arguments else (
            arguments[0] if origin is type and arguments else None)
        if isinstance(returned, type) and issubclass(returned, torch.nn.Module):
            return True
    return False


def is_function_annotation(annotation: Any) -> bool:
    """True for ``Callable`` (bare, or ``Callable[[Tensor], Tensor]``) that returns no
    module: a function the parameter's owner calls on tensors."""
    return any((typing.get_origin(member) or member) is collections.abc.Callable
               for member in union_members(annotation)) and not is_factory_annotation(annotation)


def spatial_dims(values: dict[str, Any]) -> int:
    """The number of spatial dimensions the arguments say (``spatial_dims=3``), else 2."""
    return next((value for name, value in values.items()
                 if _SPATIAL_NAMES.fullmatch(name) and value in (1, 2, 3)), 2)


def sequence_values(name: str, guess: Any, element: Any, values: dict[str, Any]) -> list[Any]:
    """Tuples for a sequence parameter whose guess is a single value: per spatial dimension
    for a size (``kernel_size`` (3, 3)), else two stages (``channels`` (16, 32))."""
    item = guess if type(guess) is int else (1.0 if element is float else 16)
    if re.search(r"kernel|stride|padding|dilation|size|shape|dims?$", name):
        return [(item,) * spatial_dims(values)]
    return [(item, item * 2), (item, item)] if type(item) is int else [(item, item)]


def module_values(values: dict[str, Any]) -> list[Any]:
    """Small real modules that map an input to an output of its shape, of the channel and
    width arguments beside the parameter; an ``nn.Identity`` last."""
    channels = [v for n, v in values.items() if CHANNEL_NAMES.fullmatch(n) and type(v) is int]
    widths = [v for n, v in values.items() if WIDTH_NAMES.fullmatch(n) and type(v) is int]
    sources = [f"torch.nn.Conv{spatial_dims(values)}d({max(channels)}, {max(channels)}, 1)"
               ] if channels else []
    sources += [f"torch.nn.Linear({max(widths)}, {max(widths)})"] if widths else []
    if not sources:
        sources = ["torch.nn.Linear(64, 64)", "torch.nn.Identity()"]
    return [made(f"__import__('torch').{source.removeprefix('torch.')}") for source in sources]


def init_calls(cls: type) -> dict[str, list[ast.Call]]:
    """Parameter -> the calls ``__init__`` makes of it (``block(in_channels, out_channels)``),
    only those with other than one argument or with a number among them: a module instance
    is called with a tensor, a class with sizes."""
    init = getattr(cls, "__init__", None)
    tree = function_tree(init)
    try:
        parameters = set(inspect.signature(init).parameters)
    except (TypeError, ValueError):
        return {}
    if tree is None:
        return {}
    calls: dict[str, list[ast.Call]] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) \
                and node.func.id in parameters:
            sized = len(node.args) + len(node.keywords) != 1 or any(
                (isinstance(part, ast.Name) and part.id in parameters) or (isinstance(
                    part, ast.Constant) and type(part.value) is int)
                for argument in [*node.args, *(k.value for k in node.keywords)]
                for part in ast.walk(argument))
            if sized:
                calls.setdefault(node.func.id, []).append(node)
    return calls


def factory_values(calls: list[ast.Call], values: dict[str, Any]) -> list[Any]:
    """Torch module classes that take the arguments of each of ``calls``, best first: a
    1x1 convolution or a ``Linear`` (a width among the arguments puts it first), a norm for
    one argument, ``nn.Identity`` last."""
    conv = f"__import__('torch').nn.Conv{spatial_dims(values)}d"
    norm = f"__import__('torch').nn.BatchNorm{spatial_dims(values)}d"
    sources = [f"__import__('functools').partial({conv}, kernel_size=1)", conv,
               "__import__('torch').nn.Linear", norm, "__import__('torch').nn.LayerNorm"]
    named = {part.id for call in calls for argument in [*call.args, *call.keywords]
             for part in ast.walk(argument) if isinstance(part, ast.Name)}
    if any(WIDTH_NAMES.fullmatch(name) for name in named) and not any(
            CHANNEL_NAMES.fullmatch(name) for name in named):
        sources.insert(0, sources.pop(2))
    fitting = [made(source) for source in sources if all(_binds(source, call) for call in calls)]
    return [*fitting[:2], made("__import__('torch').nn.Identity")]


def _binds(source: str, call: ast.Call) -> bool:
    """True when the callable ``source`` names accepts the call's arguments, by count and
    keyword names (``*args`` in the call: never; a ``**mapping`` is read as timm's ``**dd``,
    the device and dtype every torch layer takes)."""
    if any(isinstance(argument, ast.Starred) for argument in call.args):
        return False
    try:
        signature = inspect.signature(eval(source, {"__builtins__": __builtins__}))
        signature.bind(*call.args, **{keyword.arg: None for keyword in call.keywords
                                      if keyword.arg})
    except (TypeError, ValueError):
        return False
    return True


def kind_fitted(cls: type, values: dict[str, Any],
                annotations: dict[str, Any]) -> dict[str, list[Any]]:
    """Parameter -> the values of the kind its annotation or ``__init__``'s use of it says,
    the one to try first first, for the parameters whose guess in ``values`` is of another
    kind (or a module that may not fit); the others are left out."""
    calls = init_calls(cls)
    fitted: dict[str, list[Any]] = {}
    for name, guess in values.items():
        annotation = annotations.get(name)
        if name in calls or is_factory_annotation(annotation):
            fitted[name] = factory_values(calls.get(name, []), values)
        elif is_function_annotation(annotation) and not callable(guess):
            # A function of tensors that keeps their shape.
            fitted[name] = [made("__import__('torch').nn.functional.relu")]
        elif is_module_annotation(annotation):
            modules = module_values({**values, name: None})
            # A real module before the table's ``nn.Identity()``: one a capture inlines
            # leaves the wrapper's module unused.
            if isinstance(guess, torch.nn.modules.loss._Loss):  # a loss by its name
                fitted[name] = [guess, *modules]
                continue
            fitted[name] = [*modules, guess] if isinstance(guess, torch.nn.Module) and not any(
                type(m) is type(guess) for m in modules) else modules
        elif (sequence := sequence_element(annotation)) is not None \
                and not isinstance(guess, (tuple, list)):
            element, single_allowed = sequence
            if element not in (int, float, Any) and not is_module_annotation(element):
                continue  # ``Sequence[str]``: not a kind made here
            if is_module_annotation(element):  # two of the module, each its own
                first = module_values({**values, name: None})[0]
                fitted[name] = [[first, made(made_source(first) or "")]]
                continue
            tuples = sequence_values(name, guess, element, values)
            fitted[name] = [guess, *tuples] if single_allowed and guess is not None \
                else tuples
    return fitted
