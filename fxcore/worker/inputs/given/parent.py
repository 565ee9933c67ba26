"""The inputs a built root passes its submodules: the root is run once on its own example
inputs (on meta tensors, or fake ones for a root built on CPU: nothing is computed; values
read from them stood in, ``eager_run``) with a forward pre-hook on each submodule to be
traced, which records the first call's arguments.

A submodule traced as its parent built it then gets those as its example inputs instead of
inputs inferred for it alone: a block after a downsampling stage is given the maps the stage
gives, a classifier the pooled features. Only arguments that example inputs can spell are
kept: tensors of a dtype a ``TensorSpec`` names, by ``forward`` argument (a dict, list or tuple
of them too: a feature pyramid's levels, ``ContainerSpec``), and Python literals
(numbers, strings, ``None``, and tuples, lists and dicts of them: a ``fmap_dims={'h': 4, 'w':
4}``), given as they were by the modes that run ``forward``; anything else must be the
argument's default. A submodule called otherwise, or never, has none recorded and keeps the
inputs inferred for it alone, with the reason.

This runs user code (the root's ``forward``); it is only ever called inside a worker child.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field
from typing import Any

import torch

from fxcore.model.container_spec import ContainerKind, ContainerSpec, InputSpec, parse_input
from fxcore.model.results import ExampleInputs, InstantiatedOn
from fxcore.model.tensor_spec import DTYPES, TensorSpec
from fxcore.worker.inputs.eager_runs.eager_run import run_eagerly
from fxcore.worker.job.job_context import describe_exception
from fxcore.worker.meta.values_read import Place, read_note
from fxcore.worker.running.time_limit import OutOfTime


@dataclass
class PassedInputs:
    """What one run of the root recorded: submodule id -> its inputs by ``forward``
    argument, or why a submodule has none."""

    #: ``id(submodule)`` -> the tensors of its first call, by ``forward`` argument.
    inputs: dict[int, dict[str, InputSpec]] = field(default_factory=dict)
    #: ``id(submodule)`` -> the literals of its first call other than defaults, by argument.
    values: dict[int, dict[str, Any]] = field(default_factory=dict)
    #: ``id(submodule)`` -> why its inputs were not recorded (called with a value example
    #: inputs cannot spell, or never called).
    missing: dict[int, str] = field(default_factory=dict)
    #: Why nothing was recorded (the root has no example inputs, or running it failed).
    failed: str | None = None
    #: The lines whose values read from tensor data were stood in while the root ran.
    read: list[Place] = field(default_factory=list)

    def reason(self, submodule: torch.nn.Module) -> str | None:
        """Why ``submodule`` has no recorded inputs; None when it has them."""
        if id(submodule) in self.inputs:
            return None
        return self.failed or self.missing.get(id(submodule), "it was not called")


#: How a root's own example inputs were decided, as a submodule's inputs note says it.
_ROOT_INPUTS_FROM = {"config": "configured", "annotation": "from its forward's annotations",
                     "inferred": "inferred", "parent": "as its own parent passes them",
                     "example": "as its code's example gives them"}


def passed_note(parent: str, path: str, parent_inputs: ExampleInputs, read: list[Place]) -> str:
    """How the inputs a parent passes a submodule were found (``ExampleInputs.note``), the
    parent's run having stood in the values read at ``read``."""
    given = ", ".join(f"{name}: {spec}" for name, spec in parent_inputs.tensors.items())
    return (f"as {parent} passes them to {path} when run on its own example inputs {given}, "
            f"{_ROOT_INPUTS_FROM[parent_inputs.origin]}{read_note(read)}")


def passed_inputs(root: torch.nn.Module, root_inputs: ExampleInputs | None,
                  concrete_args: dict[str, Any], instantiated_on: InstantiatedOn,
                  submodules: list[torch.nn.Module], seconds: float) -> PassedInputs:
    """Run ``root`` once on ``root_inputs`` (its ``concrete_args`` as keywords) and record
    the first call of each of ``submodules``, within ``seconds`` where the worker can set a
    timer."""
    if root_inputs is None:
        return PassedInputs(failed="the parent has no example inputs to run it on")
    try:
        specs = {name: parse_input(text) for name, text in root_inputs.tensors.items()}
    except ValueError as error:
        return PassedInputs(failed=f"the parent's example inputs do not read: {error}")
    passed = PassedInputs()
    # Only the first call counts: a block used twice is traced on its first inputs.
    hooks = [submodule.register_forward_pre_hook(_recorder(submodule, passed), with_kwargs=True)
             for submodule in submodules]
    try:
        passed.read = run_eagerly(root, instantiated_on, specs, concrete_args, seconds)
    except OutOfTime:
        return PassedInputs(failed=f"running the parent on its example inputs took longer "
                                   f"than {seconds:g} s")
    except BaseException as error:  # user code may raise anything
        if isinstance(error, KeyboardInterrupt):
            raise
        return PassedInputs(failed=f"running the parent on its example inputs raised "
                                   f"{describe_exception(error)}")
    finally:
        for hook in hooks:
            hook.remove()
    return passed


def _recorder(submodule: torch.nn.Module, passed: PassedInputs) -> Any:
    def record(_module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
               ) -> None:
        key = id(submodule)
        if key in passed.inputs or key in passed.missing:
            return
        spelled = _spelled_arguments(submodule, args, kwargs)
        if isinstance(spelled, str):
            passed.missing[key] = spelled
        else:
            passed.inputs[key], passed.values[key] = spelled
    return record


def _spelled_arguments(submodule: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]
                       ) -> tuple[dict[str, InputSpec], dict[str, Any]] | str:
    """The call's tensors and its literals other than defaults, by ``forward`` argument, or
    why example inputs cannot give it."""
    try:
        signature = inspect.signature(submodule.forward)
        bound = signature.bind(*args, **kwargs)
    except (TypeError, ValueError) as error:
        return f"its call does not bind to its forward: {describe_exception(error)}"
    inputs: dict[str, InputSpec] = {}
    values: dict[str, Any] = {}
    for name, value in bound.arguments.items():
        parameter = signature.parameters[name]
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            if value:
                return f"it is called with *{name}, which example inputs cannot give"
            continue
        if isinstance(value, torch.Tensor):
            spec = _tensor_spec(value)
            if spec is None:
                return f"its argument {name} is a {value.dtype} tensor"
            inputs[name] = spec
        elif (container := _container_spec(value)) is not None:
            inputs[name] = container
        elif _is_literal(value):
            if not _is_default(value, parameter.default):
                values[name] = value
        elif not _is_default(value, parameter.default):
            return (f"its argument {name} is given a {type(value).__name__}, which example "
                    "inputs cannot give")
    return (inputs, values) if inputs else "it is called without tensors"


def _tensor_spec(value: torch.Tensor) -> TensorSpec | None:
    dtype = str(value.dtype).removeprefix("torch.")
    return TensorSpec(dtype, tuple(int(size) for size in value.shape)) \
        if dtype in DTYPES else None


def _container_spec(value: Any) -> ContainerSpec | None:
    """A non-empty dict (by string keys), list or tuple whose items are all tensors a
    ``TensorSpec`` spells, as a spec; None for anything else."""
    kind: ContainerKind
    if type(value) is dict and all(type(key) is str for key in value):
        items = list(value.items())
        kind = "dict"
    elif type(value) in (list, tuple):
        items = [(str(index), item) for index, item in enumerate(value)]
        kind = "list" if type(value) is list else "tuple"
    else:
        return None
    specs = [(key, _tensor_spec(item)) for key, item in items
             if isinstance(item, torch.Tensor)]
    if not items or len(specs) < len(items) or any(spec is None for _, spec in specs):
        return None
    return ContainerSpec(kind, tuple((key, spec) for key, spec in specs if spec is not None))


def _is_literal(value: Any, depth: int = 0) -> bool:
    """A value ``ast.literal_eval`` gives back from its ``repr``: a number, a string, ``None``,
    or a small tuple, list or dict of them."""
    if value is None or type(value) in (bool, int, float, str):
        # A NaN's or an infinity's repr reads back as a name, not a number.
        return type(value) is not float or math.isfinite(value)
    if depth > 2 or type(value) not in (tuple, list, dict) or len(value) > 16:
        return False
    items = [*value.keys(), *value.values()] if isinstance(value, dict) else list(value)
    return all(_is_literal(item, depth + 1) for item in items)


def _is_default(value: Any, default: Any) -> bool:
    """``value`` is what ``forward`` takes when the argument is left out."""
    if value is default:
        return True
    scalars = (bool, int, float, str)
    return type(value) is type(default) and isinstance(value, scalars) and value == default
