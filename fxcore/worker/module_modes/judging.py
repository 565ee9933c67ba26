"""The ``nn.Module`` mode a class is captured in: ``model.train()`` or ``model.eval()``.

A class is built in train mode (``nn.Module``'s default). torch.fx traces it as built. Under
``module-mode = "auto"`` (``EngineConfig.module_mode``) export and onnx judge it in eval mode, as
a deployed model runs, and compile, used for training as much as for inference, in both modes
where they can differ; ``"train"`` or ``"eval"`` judges export and compile in that mode alone.
The verdicts of two modes become one (``mode_verdicts.merged``).

Whether the modes can differ is decided without running anything (a dynamic check, dynamo's
guards on ``training``, would need the capture it is meant to spare): some class of the model's
module tree, below ``nn.Module``, reads the attribute ``training`` in one of its methods or in a
function outside torch that a method names, followed call by call (a helper handed the module).
torch's own layers (``torch.nn.modules``: dropout, batch and instance norm, RReLU, the RNNs,
attention and transformer layers) are left out: they compute differently in the two modes but
torch.compile and torch.export capture them the same, with the same breaks and verdict, checked
against real torch for each of them
(tests/fxcore/worker/module_modes/test_torch_layers_in_both_modes.py).
Code that reads it but that no call of the model can run (``call_reach``: a ``predict`` that
switches to eval mode, a ``train`` override) changes nothing a capture runs, provided
``model.train()`` and ``model.eval()`` set nothing but the flags (``mode_switch``, which sets both
modes and looks). Where nothing else reads it, compile captures the class once, in train mode (as
built, and the stricter of the two for torch's layers: batch norm refuses a batch of one only
there), and says so.

Compile's loop of calls (``recompile_loop``) runs in the first mode, and in the second only
where the code that reads ``training`` can change what recompiles (``loop_can_differ``): code
that a call of the model can run (``call_reach``) and that does more than pick tensor
computations.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from fxcore.model.module_modes import EVAL, TRAIN
from fxcore.model.results import ModuleResult
from fxcore.worker.module_modes.call_reach import reached_functions
from fxcore.worker.module_modes.code_names import called, functions, names_read
from fxcore.worker.module_modes.mode_switch import only_flags_change
from fxcore.worker.module_modes.mode_verdicts import merged
from fxcore.worker.module_modes.training_branches import picks_tensor_computations
from fxcore.worker.running.budget_clock import Budget

#: The modes each capture that runs ``forward`` judges in under "auto", in the order they
#: run (eval first: inputs decided there serve a train mode that may refuse them).
_AUTO: dict[str, tuple[str, ...]] = {"export": (EVAL,), "compile": (EVAL, TRAIN),
                                     "onnx": (EVAL,)}
#: Said on a class compile captured once under "auto".
ONE_CAPTURE_NOTE = ("Compiled in train mode (as built) alone; the eval graph (model.eval()) was "
                    "not captured because nothing differs: no code of this class, of its "
                    "submodules or that they call reads `training`, beside torch's own "
                    "layers, which torch compiles the same in both modes")
#: Said on a class compile captured once under "auto" whose code reads `training` only where
#: no call of the model runs it.
ONE_CAPTURE_UNREACHED_NOTE = (
    "Compiled in train mode (as built) alone; the eval graph (model.eval()) was not captured "
    "because nothing a call runs differs: the code that reads `training` ({readers}) is code a "
    "call of the model does not run, model.train() and model.eval() set nothing else, and "
    "torch's own layers compile the same in both modes")
#: Said on a class compiled in both modes whose loop of calls ran in the first alone.
ONE_LOOP_NOTE = ("The loop of calls that looks for recompilations was run in {first} mode, "
                 "not again in {other} mode: the code that reads `training` only picks tensor "
                 "computations, which recompile the same in both modes, or is code a call of "
                 "the model does not run")
#: Classes already read: their methods, and functions those call, that read ``training``.
_TRAINING_READERS: dict[type, list[Any]] = {}


@dataclass(frozen=True)
class ModePlan:
    """The modes a capture runs a class in, and the modes its verdict then holds for."""

    runs: tuple[str, ...]
    holds_for: tuple[str, ...]
    #: Said on the verdict: why it is judged in the mode it is.
    note: str | None = None


#: Where torch's own layers are defined: classes from here are captured the same in both
#: modes (see the module's docstring), and functions from torch are torch's business.
_TORCH_LAYERS = "torch.nn.modules."


def readers(functions: Iterator[Any], name: str) -> Iterator[Any]:
    """Those of ``functions``, and of the functions outside torch they call (followed by the
    names their code reads, each once), whose code reads ``name``."""
    pending, seen = list(functions), set()
    while pending:
        function = pending.pop()
        if function in seen:
            continue
        seen.add(function)
        names = names_read(function.__code__)
        if name in names:
            yield function
        pending.extend(called(function, names))


def _methods(cls: type, torch_layers: bool) -> Iterator[Any]:
    """The functions of ``cls`` and of its bases below ``nn.Module``; of torch's own layers'
    classes too only where ``torch_layers``."""
    return (function for klass in cls.__mro__
            if klass not in (torch.nn.Module, object)
            and (torch_layers or not klass.__module__.startswith(_TORCH_LAYERS))
            for value in vars(klass).values() for function in functions(value))


def class_reads(cls: type, name: str) -> bool:
    """Whether a method of ``cls`` or of a base below ``nn.Module`` reads ``name``."""
    return any(name in names_read(function.__code__)
               for function in _methods(cls, torch_layers=True))


def training_readers(cls: type) -> list[Any]:
    """The methods of ``cls`` and of its bases below ``nn.Module``, torch's own layers left
    out, and the functions outside torch they call, that read ``training`` (``nn.Module``'s
    own ``train()`` sets it for every class)."""
    if cls not in _TRAINING_READERS:
        _TRAINING_READERS[cls] = list(readers(_methods(cls, torch_layers=False), "training"))
    return _TRAINING_READERS[cls]


def all_training_readers(model: torch.nn.Module) -> list[Any]:
    return [function for cls in {type(module) for module in model.modules()}
            for function in training_readers(cls)]


def modes_can_differ(model: torch.nn.Module) -> bool:
    """Whether ``model`` may behave differently in train and eval mode (see the module's
    docstring)."""
    readers = all_training_readers(model)
    if readers and not reached_functions(model).isdisjoint(readers):
        return True
    return not only_flags_change(model)


def loop_can_differ(model: torch.nn.Module) -> bool:
    """Whether compile's loop of calls can find other recompilations in one mode than in the
    other: some code of ``model``'s module tree outside torch's own layers that a call of
    ``model`` can run (``call_reach``) reads ``training`` otherwise than to pick tensor
    computations (``training_branches``)."""
    instances: dict[type, list[torch.nn.Module]] = {}
    for module in model.modules():
        instances.setdefault(type(module), []).append(module)
    differing = [function for cls, members in instances.items()
                 for function in training_readers(cls)
                 if not picks_tensor_computations(function, members)]
    # A method no call runs (a `predict` that calls self.eval()) changes nothing it recompiles.
    return bool(differing) and not reached_functions(model).isdisjoint(differing)


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
        return ModePlan(auto, (TRAIN, EVAL)) if differ else ModePlan(
            (TRAIN,), (TRAIN, EVAL), _one_capture_note(model))
    note = (f"Judged in {auto[0]} mode (model.{auto[0]}()), as a deployed model runs: the "
            "code of this class or of its submodules reads `training` (set "
            "`module-mode` under [tool.fx-lsp] to choose)") if differ else None
    return ModePlan(auto, auto, note)


def _one_capture_note(model: torch.nn.Module) -> str:
    readers = sorted({function.__qualname__ for function in all_training_readers(model)})
    if not readers:
        return ONE_CAPTURE_NOTE
    return ONE_CAPTURE_UNREACHED_NOTE.format(readers=", ".join(f"`{name}`" for name in readers))


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
           verdict: Callable[[bool], ModuleResult], seconds: float, loop: bool = True
           ) -> ModuleResult:
    """``verdict(loop)`` made in each mode the setting chooses for ``capture_mode``, merged
    into one verdict marked with the modes it holds for. ``verdict``'s argument: whether
    compile's loop of calls runs, in the first mode always, in the next only where its answer
    can differ there (``training_branches``); in none where ``loop`` is False (the job runs
    single calls alone). A mode is left out when the time spent, and as much again, would
    exceed ``seconds`` (the class's time-out, which the engine counts from the last message
    sent)."""
    plan = mode_plan(setting, capture_mode, model)
    if plan is None:
        return verdict(loop)
    results = []
    started = Budget()
    loop_again = len(plan.runs) < 2 or loop_can_differ(model)
    for mode in plan.runs:
        spent = started.spent()
        if results and spent * (len(results) + 1) / len(results) > seconds:
            kept_mode, kept = results[0]
            kept.capture_notes.append(
                f"Judged in {kept_mode} mode only: judging it in {mode} mode (model.{mode}()) "
                f"as well would take longer than the class's time-out ({seconds:g} s)")
            kept.module_modes = [kept_mode]
            return kept
        with in_mode(model, mode):
            results.append((mode, verdict(loop and (not results or loop_again))))
    if len(results) > 1:
        result = merged(results)
        if loop and not loop_again:
            result.capture_notes.append(ONE_LOOP_NOTE.format(first=results[0][0],
                                                             other=results[1][0]))
        return result
    result = results[0][1]
    result.module_modes = list(plan.holds_for)
    if plan.note is not None:
        result.capture_notes.append(plan.note)
    return result
