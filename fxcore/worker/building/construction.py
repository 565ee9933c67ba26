"""Building a class's instance inside a worker: on the meta device where possible, never
loading pretrained weights, with the configured factory or arguments; and which constructor
arguments are still missing."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
from typing import Any, NamedTuple

import torch

from fxcore.model.job_spec import ModuleConfig
from fxcore.model.results import InstantiatedOn
from fxcore.worker.building.meta_data_checks import DataCheckedOnCpu
from fxcore.worker.building.weights import without_weights
from fxcore.worker.devices.cuda_factories import cuda_factories_at_build
from fxcore.worker.devices.meta_branches import MetaBranch, built_on_fake
from fxcore.worker.devices.meta_reads import MetaRead, described, meta_reads
from fxcore.worker.job.job_context import describe_exception
from fxcore.worker.meta.literal_values import literal_tensors


class Constructed(NamedTuple):
    """An instance, where it was built, whether pretrained weights were asked for and
    skipped, and where its constructor read meta (``meta_branches``)."""

    model: torch.nn.Module
    instantiated_on: InstantiatedOn
    weights_skipped: bool
    meta_branch: MetaBranch | None = None


def build(cls: type, module_config: ModuleConfig, meta_only: bool = False) -> Constructed:
    """Construct on the meta device (no weights); on CPU if the constructor needs real
    values (``.item()``, ``.tolist()``), unless ``meta_only``. Tensors made from Python data
    are checked as the CPU checks them (``DataCheckedOnCpu``): an instance the CPU would not
    build is not built on meta either. A constructor that asked whether its tensors are on
    meta and heard yes (``meta_reads``) is run again on fake tensors, as it runs on the CPU
    (``meta_branches``); where that fails, the instance built on meta comes back with the
    failure, and the class has no verdict. The tensors it makes from Python data keep their
    numbers (``literal_tensors``): a flag buffer reads as it does on the CPU."""
    args, kwargs = module_config.args, module_config.kwargs
    with without_weights() as weights, literal_tensors():
        if module_config.factory:
            factory = resolve(module_config.factory)
            with meta_reads() as reads, torch.device("meta"), DataCheckedOnCpu(), \
                    cuda_factories_at_build():
                model = all_on_meta(factory(*args, **kwargs))
            return _again_on_fake(lambda: factory(*args, **kwargs), model, "factory",
                                  weights.skipped, reads)
        try:
            with meta_reads() as reads, torch.device("meta"), DataCheckedOnCpu(), \
                    cuda_factories_at_build():
                model = all_on_meta(cls(*args, **kwargs))
        except Exception:
            if meta_only:
                raise
            return Constructed(cls(*args, **kwargs), "cpu", weights.skipped)
        return _again_on_fake(lambda: cls(*args, **kwargs), model, "meta", weights.skipped,
                              reads)


def _again_on_fake(construct: Callable[[], Any], model: torch.nn.Module,
                   instantiated_on: InstantiatedOn, weights_skipped: bool,
                   reads: list[MetaRead]) -> Constructed:
    """``model`` as built on meta where its construction read no meta (``reads``), else
    ``construct``'s instance built on fake tensors, or ``model`` with why that failed."""
    if not reads:
        return Constructed(model, instantiated_on, weights_skipped)
    branch = MetaBranch(described(reads))
    try:
        return Constructed(all_on_meta(built_on_fake(construct)), instantiated_on,
                           weights_skipped, branch)
    except Exception as error:  # user code may raise anything on fake tensors
        branch.failure = describe_exception(error)
        return Constructed(model, instantiated_on, weights_skipped, branch)


def all_on_meta(model: Any) -> Any:
    """``model`` with every weight on meta: a legacy constructor (``torch.Tensor(n)``, as
    in transformers' Wav2Vec2) ignores the meta default device and leaves its tensor on the
    CPU, where running the model would meet meta tensors."""
    if isinstance(model, torch.nn.Module) and any(
            not tensor.is_meta for tensor in (*model.parameters(), *model.buffers())):
        model.to("meta")
    return model


def missing_parameters(cls: type, args: list[Any], kwargs: dict[str, Any]) -> list[str]:
    """Constructor parameters that have no default and are not configured."""
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        return []
    try:
        signature.bind(*args, **kwargs)
        return []
    except TypeError:
        pass
    bound_positional = len(args)
    missing = []
    for index, parameter in enumerate(signature.parameters.values()):
        if parameter.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        if parameter.default is not inspect.Parameter.empty or parameter.name in kwargs:
            continue
        if parameter.kind != inspect.Parameter.KEYWORD_ONLY and index < bound_positional:
            continue
        missing.append(parameter.name)
    return missing


def resolve(path: str) -> Any:
    """``pkg.module:attribute`` or ``pkg.module.attribute`` to the object it names."""
    if ":" in path:
        module_name, _, attribute = path.partition(":")
    else:
        module_name, _, attribute = path.rpartition(".")
    value: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        value = getattr(value, part)
    return value


def configured_call_note(class_name: str, module_config: ModuleConfig) -> str:
    """What the configuration passed, and whether TOML turned a tuple into a list."""
    if module_config.call is not None:
        site = module_config.call
        passed = ", ".join([*site.args, *(f"{name}={value}" for name, value in site.kwargs)])
        return f" It was called as configured: {class_name}({passed})."
    passed = ", ".join([*(repr(value) for value in module_config.args),
                        *(f"{name}={value!r}" for name, value in module_config.kwargs.items())])
    note = f" It was called with the configured arguments: {class_name}({passed})."
    lists = [name for name, value in module_config.kwargs.items() if isinstance(value, list)]
    lists += [f"argument {index + 1}" for index, value in enumerate(module_config.args)
              if isinstance(value, list)]
    if lists:
        note += (f" TOML has no tuples or None: {', '.join(lists)} arrived as a list. To pass "
                 f'a tuple, write the call instead: call = "{class_name}(...)" with Python '
                 "literals.")
    return note
