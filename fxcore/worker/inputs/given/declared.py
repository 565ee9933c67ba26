"""Example inputs the code already gives, tried before any guess: the ecosystem's conventions
for an example beside a model, read from the instance, and the calls of the class in the
workspace's tests and examples (``workspace_calls``, read, never run):

- ``example_input_array``, a Lightning module's example (an attribute set in ``__init__``, or a
  property): a tensor for the first argument, a tuple or list for the arguments in order, a
  dict by argument name;
- ``dummy_inputs``, transformers' convention (a property, or a method called without
  arguments): a dict of tensors by argument name, or a tensor for the first argument.

A tensor gives its dtype and shape; a dict, list or tuple of tensors for one argument gives a
container (``ContainerSpec``). An example is accepted when the model runs on it eagerly, as
every inferred input is; the note names where it came from.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import torch
from torch import nn

from fxcore.model.container_spec import ContainerSpec, InputSpec
from fxcore.model.results import InstantiatedOn
from fxcore.model.tensor_spec import TensorSpec
from fxcore.worker.inputs.from_layers.first_layer import (
    LayerInputs,
    eager_error_before,
    raised,
    required_arguments,
)
from fxcore.worker.inputs.given.workspace_calls import called_inputs
from fxcore.worker.job.input_refusals import inputs_from_code
from fxcore.worker.running.budget_clock import Budget

#: The instance attributes that hold an example input, in the order tried.
EXAMPLE_ATTRIBUTES = ("example_input_array", "dummy_inputs")


def declared_inputs(cls: type, model: nn.Module, instantiated_on: InstantiatedOn,
                    concrete_args: dict[str, object], seconds: float, workspace_root: str,
                    is_workspace_path: Callable[[str], bool]) -> LayerInputs | str | None:
    """The first example the code gives that the model runs on; where it runs on none, what
    the first raised; None where the code gives none (or the search outlasts ``seconds``)."""
    try:
        parameters = [name for name in inspect.signature(cls.forward).parameters][1:]
    except (TypeError, ValueError):
        return None
    required = required_arguments(cls, concrete_args) or []
    deadline = Budget(seconds)
    refusal = None
    for specs, source in _examples(cls, model, parameters, workspace_root):
        if not set(required) <= set(specs):
            continue
        with inputs_from_code():
            ran = eager_error_before(deadline, model, instantiated_on, specs, concrete_args)
        if ran is None:
            return refusal
        if not isinstance(ran, Exception):
            return LayerInputs(specs, f"from {source}, which {cls.__name__} runs on")
        refusal = refusal or f"{_spelled(specs)} from {source}, {raised(ran, is_workspace_path)}"
    return refusal


def _examples(cls: type, model: nn.Module, parameters: list[str],
              workspace_root: str) -> Iterator[tuple[dict[str, InputSpec], str]]:
    """Each example the code gives, as specs by argument, with where it came from, one by
    one: the workspace's calls are read only until one runs."""
    for attribute in EXAMPLE_ATTRIBUTES:
        try:
            value = getattr(model, attribute, None)
            if callable(value) and not isinstance(value, (torch.Tensor, nn.Module)):
                value = value()
        except Exception:  # user code may raise anything: then it gives no example
            continue
        specs = by_argument(value, parameters)
        if specs:
            yield specs, f"`{attribute}` of {cls.__name__}"
    for values, place in called_inputs(cls.__name__, workspace_root):
        specs = by_argument(values, parameters)
        if specs:
            yield specs, f"the call of {cls.__name__} in {place}"


def by_argument(value: Any, parameters: list[str]) -> dict[str, InputSpec] | None:
    """An example value as specs by ``forward`` argument: a tensor for the first, a tuple or
    list for them in order, a dict by name (a dict whose keys are no arguments is the first
    argument's container); None where it holds anything but tensors (and ``None``s left out)."""
    if not parameters:
        return None
    if isinstance(value, Mapping):
        if value and set(value) <= set(parameters):
            specs = {name: _spec(item) for name, item in value.items() if item is not None}
            return None if None in specs.values() else specs  # type: ignore[return-value]
        value = [value]
    elif not isinstance(value, (tuple, list)):
        value = [value]
    if len(value) > len(parameters):
        return None
    specs = {name: _spec(item) for name, item in zip(parameters, value, strict=False)
             if item is not None}
    return None if not specs or None in specs.values() else specs  # type: ignore[return-value]


def _spec(value: Any) -> InputSpec | None:
    """A tensor's spec, or a container's of tensors; None for anything else."""
    if isinstance(value, torch.Tensor):
        return TensorSpec(str(value.dtype).removeprefix("torch."), tuple(value.shape))
    if isinstance(value, TensorSpec):
        return value
    if isinstance(value, Mapping):
        items = [(str(key), _spec(item)) for key, item in value.items()]
        kind = "dict"
    elif isinstance(value, (tuple, list)):
        items = [(str(index), _spec(item)) for index, item in enumerate(value)]
        kind = "list" if isinstance(value, list) else "tuple"
    else:
        return None
    if not items or any(not isinstance(spec, TensorSpec) for _, spec in items):
        return None
    return ContainerSpec(kind, tuple(items))  # type: ignore[arg-type]


def _spelled(specs: dict[str, InputSpec]) -> str:
    return ", ".join(f"{name}: {spec}" for name, spec in specs.items())
