"""The instance of a class that its verdicts are on, when the first one built may not fit it:
torch.fx's verdict (else the first mode's) on an instance built from defaults or guesses says
it does not fit (FX105, FX406, FX504), or, on the class's own guessed arguments, that its
shapes do not fit on any input tried (FX300: ``x + conv(x)`` with ``in_channels=3,
out_channels=16``). Then the next instances
(``fxcore.worker.building.instances.other_instances``) are traced, and the best is kept: the
first that fits, else the first whose only problem is its shapes, else the first without a
verdict for another reason, else the last.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from fxcore.model.instance_trust import (
    DOES_NOT_FIT_CODES,
    does_not_fit,
    instance_call,
    may_not_fit,
)
from fxcore.model.results import ModuleResult
from fxcore.worker.building.instances import Built, other_instances
from fxcore.worker.capture.base import Capture
from fxcore.worker.job.capture_target import CaptureTarget
from fxcore.worker.job.job_context import JobContext
from fxcore.worker.pipeline.capturing import built_verdict
from fxcore.worker.running.budget_clock import Budget
from fxcore.worker.running.seeding import seed_generators
from fxcore.workspace.discovery import ClassSource

#: At most this many instances of one class are traced in search of one that fits it.
MAX_INSTANCES = 4

#: ``misfit`` ranks: a verdict, a verdict on a guessed instance with an empty layer, shapes
#: that fit no input, no verdict, does not fit.
_FITS, _EMPTY, _SHAPES, _NO_VERDICT, _DOES_NOT_FIT = range(5)
#: The ranks after which another instance is traced.
_TRY_ANOTHER = (_EMPTY, _SHAPES, _DOES_NOT_FIT)


def misfit(result: ModuleResult, model: torch.nn.Module | None = None) -> int:
    """How far an instance's verdict is from one on an instance that fits: ``_FITS``; a
    verdict on an instance built from defaults or guesses that holds a weight with no element
    (``model``: a guessed ``in_channels=3`` reduced 16 times, ``Conv2d(3, 0)``, which torch
    refuses to run on the CPU where torch.fx traces it, and meta runs it); shapes that fit no
    input tried on the class's own guessed arguments; no verdict for another reason (no
    inputs found); the instance does not fit (FX105, FX406, FX504)."""
    if does_not_fit(result):
        return _DOES_NOT_FIT
    if result.status == "not-traced":
        return _NO_VERDICT
    own_guess = result.arguments is not None and result.arguments.origin == "guessed"
    if own_guess and result.shape_errors:
        return _SHAPES
    empty = model is not None and may_not_fit(result.arguments) and any(
        parameter.numel() == 0 for parameter in model.parameters())
    return _EMPTY if empty else _FITS


def target_of(cls: type, source: ClassSource, built: Built) -> CaptureTarget:
    return CaptureTarget(cls, source, built.model, built.instantiated_on, built.concrete_args,
                         arguments=built.arguments,
                         meta_read=built.meta_branch.read if built.meta_branch else None)


def fitting_instance(context: JobContext, cls: type, source: ClassSource, built: Built,
                     judge: Capture, timeout: float
                     ) -> tuple[Built, CaptureTarget, ModuleResult]:
    """The instance kept, its capture target and its verdict by ``judge`` (torch.fx, else
    the first mode: ``built_verdict``). At most ``MAX_INSTANCES``
    are traced, and another only while the time spent, and as much again as one took on
    average, stays within ``timeout``; the verdict kept names the instances tried before."""
    started = Budget()
    others: Iterator[Built] | None = None
    traced: list[tuple[Built, CaptureTarget, ModuleResult]] = []
    ranks: list[int] = []  # each traced instance's ``misfit``
    while True:
        target = target_of(cls, source, built)
        traced.append((built, target, built_verdict(context, judge, target, built)))
        ranks.append(misfit(traced[-1][2], built.model))
        spent = started.spent()
        if ranks[-1] not in _TRY_ANOTHER or len(traced) >= MAX_INSTANCES \
                or spent * (len(traced) + 1) / len(traced) > timeout:
            break
        others = others or other_instances(context, cls, built)
        seed_generators()  # each instance built from the same state, as the first
        following = next(others, None)
        if following is None:
            break
        built = following
    # The best, the earliest of its rank; of instances that do not fit, the latest.
    index = min(range(len(traced)),
                key=lambda i: (ranks[i], -i if ranks[i] == _DOES_NOT_FIT else i))
    kept = traced[index]
    _name_instances_tried(kept[2], ranks[index], [
        _misfit_text(result, ranks[i]) for i, (_, _, result) in enumerate(traced) if i != index])
    return kept


def _misfit_text(result: ModuleResult, rank: int) -> str:
    if rank == _EMPTY and result.arguments is not None:
        return (f"{instance_call(result.class_name, result.arguments)}: a layer without "
                "weights (a weight of no element), which torch does not run on the CPU.")
    if result.reason or not result.shape_errors or result.arguments is None:
        return result.reason or ""
    message = result.shape_errors[0].message
    return (f"{instance_call(result.class_name, result.arguments)}: shapes do not fit "
            f"({message[:300]}{'...' if len(message) > 300 else ''}).")


def _name_instances_tried(result: ModuleResult, rank: int, others: list[str]) -> None:
    """Say on ``result`` (of ``misfit`` ``rank``) which other instances were traced and did not
    fit (``others``, each ``_misfit_text``): in its "does not fit" message (FX105, FX406,
    FX504) when it does not fit either, else as a note on the verdict."""
    if not others:
        return
    tried = "; ".join(others)
    if does_not_fit(result):
        result.reason = f"{result.reason} Instances tried before: {tried}"
        for failure in result.failures:
            if failure.code in DOES_NOT_FIT_CODES:
                failure.message += f" Instances tried before, which did not fit either: {tried}"
    elif rank != _FITS:
        result.capture_notes.append(f"Other instances fx-lsp traced fit no better: {tried}")
    elif result.arguments is not None:
        instance = instance_call(result.class_name, result.arguments)
        result.capture_notes.append(f"{tried} This verdict is on the next instance fx-lsp "
                                    f"could build, {instance}.")
