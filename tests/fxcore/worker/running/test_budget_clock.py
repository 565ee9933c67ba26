"""The worker's budgets (``fxcore.worker.running.budget_clock``) count its CPU time, not the time it
waits: a search whose candidates wait tries them all, however long the waits (a wait is what
a loaded machine adds), and one whose candidates compute is cut at its budget of CPU time;
a wait is ended only by the wall-clock backstop, 1.5 times the budget times the time-out
scale."""

from __future__ import annotations

import time

import pytest
import torch
from torch import nn

from fxcore.worker.inputs.from_layers.first_layer import layer_inputs
from fxcore.worker.running.budget_clock import Budget

#: Far enough for no backstop to end anything here (150 times a budget).
NO_BACKSTOP = "100"


def spin(seconds: float) -> None:
    """Use ``seconds`` of CPU time."""
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_a_budget_counts_cpu_time_not_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FX_LSP_TIMEOUT_SCALE", NO_BACKSTOP)
    budget = Budget(0.2)
    time.sleep(0.4)
    assert not budget.over() and budget.spent() < 0.1
    spin(0.25)
    assert budget.over() and not budget.slowed()


@pytest.mark.usefixtures("unscaled_timeouts")
def test_a_wait_is_ended_by_the_wall_clock_backstop() -> None:
    budget = Budget(0.1)
    time.sleep(0.2)  # past 1.5 times 0.1 s
    assert budget.over() and budget.slowed()


def test_a_stopwatch_never_runs_out() -> None:
    stopwatch = Budget()
    spin(0.05)
    assert 0.05 <= stopwatch.spent() < 5 and not stopwatch.over()


class Refuses(nn.Module):
    """A first layer of known input size, and a forward that takes ``SECONDS`` (waiting or
    computing) to refuse each of the 9 candidate inputs the search then tries."""

    calls: list[tuple[int, ...]] = []
    SECONDS = 0.1
    waits = True

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls.append(tuple(x.shape))
        if self.waits:
            time.sleep(self.SECONDS)
        else:
            spin(self.SECONDS)
        raise ValueError("refused")


def searched(waits: bool, seconds: float) -> tuple[str | None, int]:
    """What the search of the first layer's candidates gives within ``seconds``, and how many
    candidates it ran."""
    with torch.device("meta"):
        model = Refuses()
    model.waits, model.calls = waits, []
    found = layer_inputs(Refuses, model, "meta", {}, seconds, lambda path: True)
    assert found is None or isinstance(found, str)
    return found, len(model.calls)


def test_a_search_whose_candidates_wait_tries_every_one(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """9 waits of 0.1 s are past the budget of 0.5 s in wall-clock time, which ended the
    search after 5 when it counted that."""
    monkeypatch.setenv("FX_LSP_TIMEOUT_SCALE", NO_BACKSTOP)
    found, calls = searched(waits=True, seconds=0.5)
    assert calls == 9
    assert found is not None and "raised ValueError: refused" in found


def test_a_search_whose_candidates_compute_is_cut_at_its_budget(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """0.3 s of CPU time each: the second candidate is stopped when the budget of 0.5 s is
    spent, and no other is tried."""
    monkeypatch.setattr(Refuses, "SECONDS", 0.3)
    monkeypatch.setenv("FX_LSP_TIMEOUT_SCALE", NO_BACKSTOP)
    started = time.process_time()
    assert searched(waits=False, seconds=0.5) == (None, 2)
    assert time.process_time() - started < 0.9


@pytest.mark.usefixtures("unscaled_timeouts")
def test_a_search_whose_candidates_wait_is_ended_by_the_backstop() -> None:
    """At a scale of 1 the 0.5 s budget's backstop is 0.75 s of wall-clock time: the eighth
    wait of 0.1 s or so is cut short: nothing is found."""
    found, calls = searched(waits=True, seconds=0.5)
    assert found is None and calls < 9
