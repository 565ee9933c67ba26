"""The ``nn.Module`` mode a class is captured in: ``model.train()`` or ``model.eval()``.

A class is built in train mode (``nn.Module``'s default). torch.fx traces it as built. Under
``module-mode = "auto"`` (``EngineConfig.module_mode``) export and onnx judge it in eval mode, as
a deployed model runs, and compile, used for training as much as for inference, in both modes
where they can differ; ``"train"`` or ``"eval"`` judges export and compile in that mode alone.
The verdicts of two modes become one (``mode_verdicts.merged``).

Whether the modes can differ is decided without running anything: some class of the model's
module tree (a Dropout, a BatchNorm, the user's own ``if self.training:``) reads the attribute
``training`` in one of its methods, below ``nn.Module`` itself. A module whose forward reads it
elsewhere (a helper function handed the module) is missed, and compiled in train mode once.
"""

from __future__ import annotations

import contextlib
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from fxcore.model.module_modes import EVAL, TRAIN
from fxcore.model.results import ModuleResult
from fxcore.worker.mode_verdicts import merged

#: The modes each capture that runs ``forward`` judges in under "auto", in the order they
#: run (eval first: inputs decided there serve a train mode that may refuse them).
_AUTO: dict[str, tuple[str, ...]] = {"export": (EVAL,), "compile": (EVAL, TRAIN),
                                     "onnx": (EVAL,)}
#: Classes already read: whether one of their own methods reads ``training``.
_READS_TRAINING: dict[type, bool] = {}


@dataclass(frozen=True)
class ModePlan:
    """The modes a capture runs a class in, and the modes its verdict then holds for."""

    runs: tuple[str, ...]
    holds_for: tuple[str, ...]
    #: Said on the verdict: why it is judged in the mode it is.
    note: str | None = None


def _codes(value: Any) -> Iterator[types.CodeType]:
    """The code objects of a class attribute: a function's (and the one it wraps), a static
    or class method's, a property's accessors."""
    if isinstance(value, (staticmethod, classmethod)):
        value = value.__func__
    if isinstance(value, property):
        for accessor in (value.fget, value.fset, value.fdel):
            yield from _codes(accessor)
        return
    code = getattr(value, "__code__", None)
    if isinstance(code, types.CodeType):
        yield code
    wrapped = getattr(value, "__wrapped__", None)
    if wrapped is not None and wrapped is not value:
        yield from _codes(wrapped)


def _reads(code: types.CodeType, name: str) -> bool:
    """Whether ``code`` or a function, lambda or comprehension nested in it reads an attribute
    or name ``name``."""
    return name in code.co_names or any(
        _reads(const, name) for const in code.co_consts if isinstance(const, types.CodeType))


def class_reads(cls: type, name: str) -> bool:
    """Whether a method of ``cls`` or of a base below ``nn.Module`` reads ``name``."""
    return any(_reads(code, name) for klass in cls.__mro__
               if klass not in (torch.nn.Module, object)
               for value in vars(klass).values() for code in _codes(value))


def reads_training(cls: type) -> bool:
    """Whether a method of ``cls`` or of a base below ``nn.Module`` reads ``training``
    (``nn.Module``'s own ``train()`` sets it for every class)."""
    if cls not in _READS_TRAINING:
        _READS_TRAINING[cls] = class_reads(cls, "training")
    return _READS_TRAINING[cls]


def modes_can_differ(model: torch.nn.Module) -> bool:
    """Whether ``model`` may behave differently in train and eval mode (see the module's
    docstring)."""
    return any(reads_training(cls) for cls in {type(module) for module in model.modules()})


def mode_plan(setting: str, capture_mode: str, model: torch.nn.Module) -> ModePlan | None:
    """How a capture judges ``model`` under the ``module-mode`` setting; None for a mode
    that does not run ``forward`` (fx: the class as built)."""
    auto = _AUTO.get(capture_mode)
    if auto is None:
        return None
    if setting != "auto":
        return ModePlan((setting,), (setting,))
    differ = modes_can_differ(model)
    if len(auto) > 1:
        # Compiled once where no code tells the modes apart: the verdict is both modes'.
        return ModePlan(auto, (TRAIN, EVAL)) if differ else ModePlan((TRAIN,), (TRAIN, EVAL))
    note = (f"Judged in {auto[0]} mode (model.{auto[0]}()), as a deployed model runs: the "
            "code of this class or of its submodules reads `training` (set "
            "`module-mode` under [tool.fx-lsp] to choose)") if differ else None
    return ModePlan(auto, auto, note)


@contextlib.contextmanager
def in_mode(model: torch.nn.Module, mode: str) -> Iterator[None]:
    """``model`` set to ``mode`` as a user sets it (``model.train()``, ``model.eval()``, which
    a class may override), then every submodule's flag put back as it was."""
    before = [(module, module.training) for module in model.modules()]
    try:
        model.train(mode == TRAIN)
    except Exception:  # user code may raise anything: set the flags as nn.Module does
        for module, _ in before:
            module.training = mode == TRAIN
    try:
        yield
    finally:
        for module, training in before:
            module.training = training


def judged(setting: str, capture_mode: str, model: torch.nn.Module,
           verdict: Callable[[], ModuleResult], seconds: float) -> ModuleResult:
    """``verdict()`` made in each mode the setting chooses for ``capture_mode``, merged into
    one verdict marked with the modes it holds for. A mode is left out when the time spent,
    and as much again, would exceed ``seconds`` (the class's time-out, which the engine
    counts from the last message sent)."""
    plan = mode_plan(setting, capture_mode, model)
    if plan is None:
        return verdict()
    results = []
    started = time.monotonic()
    for mode in plan.runs:
        spent = time.monotonic() - started
        if results and spent * (len(results) + 1) / len(results) > seconds:
            kept_mode, kept = results[0]
            kept.capture_notes.append(
                f"Judged in {kept_mode} mode only: judging it in {mode} mode (model.{mode}()) "
                f"as well would take longer than the class's time-out ({seconds:g} s)")
            kept.module_modes = [kept_mode]
            return kept
        with in_mode(model, mode):
            results.append((mode, verdict()))
    if len(results) > 1:
        return merged(results)
    result = results[0][1]
    result.module_modes = list(plan.holds_for)
    if plan.note is not None:
        result.capture_notes.append(plan.note)
    return result
