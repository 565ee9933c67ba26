"""Example inputs read from the module itself, for when no graph tells them: the fx pre-trace
stopped before the first layer, or gave no graph to read (``graph.example_inputs`` reads a
graph). The first layer in registration order whose input size is known (the same table,
``example_inputs.layer_template``) decides the class's one required ``forward`` argument;
containers and layers that only reshape are passed over, since they say nothing. A
candidate is accepted only when the model runs on it eagerly (on meta, or on fake tensors for
real weights), within a time limit: needing no capture, this serves every mode.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

from torch import nn

from fxcore.model.results import InstantiatedOn
from fxcore.model.tensor_spec import TensorSpec
from fxcore.worker.eager_run import OutOfTime, run_eagerly
from fxcore.worker.graph.example_inputs import FreeSizes, InputTemplate, layer_template

#: The free sizes tried, in order: the defaults inference uses, then larger ones (a model
#: that pools five times needs at least 32, a patch embedding a multiple of its patch).
SIZES_TRIED = (FreeSizes(), FreeSizes(image=(64, 64), depth=16, signal=64, sequence=16),
               FreeSizes(image=(224, 224), depth=16, signal=256, sequence=64))


@dataclass(frozen=True)
class LayerInputs:
    """The inputs found, and how (``ExampleInputs.note``)."""

    specs: dict[str, TensorSpec]
    note: str


def required_arguments(cls: type, concrete_args: dict[str, object]) -> list[str] | None:
    """The names of ``forward``'s arguments that have no default and are not fixed by
    ``concrete-args``; None when ``forward`` takes ``*args``/``**kwargs`` or cannot be read."""
    try:
        parameters = list(inspect.signature(cls.forward).parameters.values())[1:]
    except (TypeError, ValueError):
        return None
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters):
        return None
    return [p.name for p in parameters
            if p.default is inspect.Parameter.empty and p.name not in concrete_args]


def first_layer(model: nn.Module) -> tuple[str, nn.Module, InputTemplate] | None:
    """The first submodule, in registration order, whose input size is known."""
    for path, module in model.named_modules():
        template = layer_template(module)
        if template is not None:
            return path or "the class itself", module, template
    return None


def layer_inputs(cls: type, model: nn.Module, instantiated_on: InstantiatedOn,
                 concrete_args: dict[str, object], seconds: float) -> LayerInputs | None:
    """The inputs of a class with one required ``forward`` argument, from its first layer
    whose input size is known, as the first of ``SIZES_TRIED`` the model runs on; None when
    there is no such layer or argument, or the model runs on none of them."""
    required = required_arguments(cls, concrete_args)
    found = first_layer(model)
    if required is None or len(required) != 1 or found is None:
        return None
    (name,), (path, layer, template) = required, found
    for sizes in SIZES_TRIED:
        spec = template.spec(sizes)
        runs = runs_on(model, instantiated_on, {name: spec}, concrete_args, seconds)
        if runs is None:
            return None
        if runs:
            return LayerInputs({name: spec}, (
                f"from `{path}` ({type(layer).__name__}), the first layer whose input size "
                f"is known, which {cls.__name__} runs on: {spec}"))
    return None


def runs_on(model: nn.Module, instantiated_on: InstantiatedOn, specs: dict[str, TensorSpec],
            concrete_args: dict[str, object], seconds: float) -> bool | None:
    """Whether ``model`` runs eagerly on tensors of ``specs`` (on meta, or fake tensors for
    real weights); None when it takes longer than ``seconds``."""
    try:
        run_eagerly(model, instantiated_on, specs, concrete_args, seconds)
    except OutOfTime:
        return None
    except Exception:  # user code may raise anything: these inputs do not fit
        return False
    return True
