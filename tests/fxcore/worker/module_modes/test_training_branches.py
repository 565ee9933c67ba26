"""Whether compile's loop of calls runs again in the second ``nn.Module`` mode
(``module_modes.loop_can_differ``, ``training_branches``, ``call_reach``): not where reading
``training`` only picks tensor computations or happens in methods a call of the model does not
run, and where it can change what recompiles across calls. (That the
engine's answer then agrees with real torch in both modes:
tests/fxcore/worker/capture/compile/test_recompiles_in_modes.py.)"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from mode_judging import modes_judged

from fxcore.model.results import ModuleResult
from fxcore.worker.module_modes.judging import (
    ONE_LOOP_NOTE,
    judged,
    loop_can_differ,
    modes_can_differ,
)


def drop_in_training(module: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    return x * 0.5 if module.training else x


class DropoutBranch(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.step = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.step += 1
        if self.training:
            x = F.dropout(x, 0.1)
            x = x.masked_fill(x > 3, 0.0) * 2
        return x * self.step


class LayerPickedInline(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.drop = torch.nn.Dropout(0.1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.drop(x) if self.training else x
        return F.dropout(x, 0.1, training=self.training)


class CounterInTraining(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.step = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            self.step += 1
        return x * self.step


class SizeInTraining(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            x = x.view(x.shape[0], -1)
        return x


class HelperInTraining(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            x = drop_in_training(self, x)
        return x


class ReturnsEarlyInTraining(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            return x
        return x * 2


class KeepsTheFlag(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.was_training = self.training
        return x


class NumberInTraining(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = 3

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            x = x * self.scale
        return x


class ModeSwitch(torch.nn.Module):
    """Reads ``training`` only outside a call: a ``predict`` that switches to eval mode and a
    ``train`` override (segmentation-models-pytorch's SegmentationModel has both)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x)

    def predict(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            self.eval()
        return self(x)

    def train(self, mode: bool = True) -> ModeSwitch:
        self.training = mode
        for module in self.children():
            module.train(mode)
        return self


class SwitchCalledInForward(ModeSwitch):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.predict(x[:1]) if x.shape[0] > 4 else self.lin(x)


class SwitchNamedByString(ModeSwitch):
    def __init__(self) -> None:
        super().__init__()
        self.entry = "predict"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return getattr(self, self.entry)(x[:1]) if x.shape[0] > 4 else self.lin(x)


class CountingHook(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.step = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2

    def count(self, module: torch.nn.Module, args: tuple, output: torch.Tensor) -> None:
        if self.training:
            self.step += 1


def hooked() -> torch.nn.Module:
    model = CountingHook()
    model.register_forward_hook(model.count)
    return model


@pytest.mark.parametrize("cls", [DropoutBranch, LayerPickedInline, ModeSwitch])
def test_training_that_only_picks_tensor_computations_loops_once(cls: type) -> None:
    assert not loop_can_differ(torch.nn.Sequential(torch.nn.Linear(8, 8), cls()))


@pytest.mark.parametrize("make", [SwitchCalledInForward, SwitchNamedByString, hooked])
def test_training_read_where_a_call_can_run_it_loops_in_both_modes(make: type) -> None:
    assert loop_can_differ(torch.nn.Sequential(torch.nn.Linear(8, 8), make()))


@pytest.mark.parametrize("cls", [CounterInTraining, SizeInTraining, HelperInTraining,
                                 ReturnsEarlyInTraining, KeepsTheFlag, NumberInTraining])
def test_training_that_can_change_what_recompiles_loops_in_both_modes(cls: type) -> None:
    assert loop_can_differ(torch.nn.Sequential(torch.nn.Linear(8, 8), cls()))


@pytest.mark.parametrize("cls, loops", [(DropoutBranch, [True, False]),
                                        (CounterInTraining, [True, True])])
def test_compile_runs_the_loop_again_in_the_second_mode_only_where_it_can_differ(
        cls: type, loops: list[bool]) -> None:
    seen: list[bool] = []

    def verdict(loop: bool) -> ModuleResult:
        seen.append(loop)
        return ModuleResult(path="m.py", line=1, column=1, end_line=1, end_column=2,
                            class_name="Net", qualified_name="m:Net", status="traceable",
                            mode="compile")

    result = judged("auto", "compile", cls(), verdict, seconds=60)
    assert seen == loops and result.module_modes == ["train", "eval"]
    assert (ONE_LOOP_NOTE.format(first="eval", other="train") in result.capture_notes) is (
        loops == [True, False])


class NoiseSetByTrain(torch.nn.Module):
    """Reads ``training`` nowhere, but its ``train`` override sets what ``forward`` reads."""

    def __init__(self) -> None:
        super().__init__()
        self.noise = 0.1

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.noise if self.noise else x

    def train(self, mode: bool = True) -> NoiseSetByTrain:
        super().train(mode)
        self.noise = 0.1 if mode else 0.0
        return self


class RefusesEval(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2

    def train(self, mode: bool = True) -> RefusesEval:
        if not mode:
            raise RuntimeError("this block stays in train mode")
        return super().train(mode)


def test_training_read_only_where_no_call_runs_it_is_compiled_once() -> None:
    """segmentation-models-pytorch's architectures: a `predict` and a `train` override read
    `training`, forward does not; the train-mode compile is the verdict of both modes."""
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), ModeSwitch())
    assert not modes_can_differ(model)
    seen, result = modes_judged(model)
    assert seen == [True] and result.module_modes == ["train", "eval"]
    (note,) = result.capture_notes
    assert "(`ModeSwitch.predict`, `ModeSwitch.train`) is code a call of the model does not " \
        "run" in note
    assert all(module.training for module in model.modules())


@pytest.mark.parametrize("make", [SwitchCalledInForward, SwitchNamedByString, NoiseSetByTrain,
                                  RefusesEval])
def test_a_mode_switch_a_call_runs_or_that_sets_more_is_compiled_in_both_modes(
        make: type) -> None:
    """Called from forward; or an override that sets other state than the flags, or fails:
    both modes, as before the one-compile rule (NoiseSetByTrain was compiled once then)."""
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), make())
    assert modes_can_differ(model)
    seen, _ = modes_judged(model)
    assert seen == [False, True]
