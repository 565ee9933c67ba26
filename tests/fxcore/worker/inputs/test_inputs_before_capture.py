"""Example inputs are decided before capture for a capture mode that needs them
(``needs_inputs = True``): configured first, then ``forward``'s annotations, then inferred from
the first layers that use each argument, without the capture they feed. A capture mode of this
test's own records what it was given when it was called.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest

from fxcore.model.job_spec import EngineConfig, ModuleConfig, TraceJob
from fxcore.model.results import Hint
from fxcore.model.tensor_spec import TensorSpec
from fxcore.protocol.worker_messages import Verdict, WorkerMessage
from fxcore.worker.capture.fx.tracing import FxCapture
from fxcore.worker.inputs import deciding
from fxcore.worker.job.capture_target import CaptureRecord, CaptureTarget
from fxcore.worker.job.inputs_decision import InputsDecision
from fxcore.worker.job.job_context import JobContext
from fxcore.worker.pipeline.job import Job
from fxcore.worker.running import budget_clock

MODELS = '''
from typing import Annotated

import torch
from torch import nn


class Configured(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x)


class Annotated(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.embed = nn.Embedding(10, 6)

    def forward(self, x: "Float[Tensor, 'batch 3 h w']", tokens):
        return self.conv(x).sum() + self.embed(tokens).sum()


class Inferred(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(5, 7, 3)

    def forward(self, image):
        return self.conv(image.relu())


class Untraceable(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(12, 3)

    def forward(self, x):
        y = self.fc(x)
        if y.sum() > 0:
            return y
        return -y


class Undecided(nn.Module):
    def forward(self, x):
        return x.sum()
'''


class RecordsInputs:
    """A capture mode that needs inputs and records those it is given."""

    mode: ClassVar[str] = "records-inputs"
    needs_inputs: ClassVar[bool] = True

    def __init__(self) -> None:
        self.seen: dict[str, tuple[str | None, dict[str, str] | None]] = {}

    def capture(self, context: JobContext, target: CaptureTarget, inputs: InputsDecision, *,
                loop_of_calls: bool = True) -> CaptureRecord:
        specs = inputs.specs
        self.seen[target.cls.__name__] = (
            inputs.origin,
            None if specs is None else {name: str(spec) for name, spec in specs.items()})
        return CaptureRecord(self.mode)

    def hints(self, context: JobContext, target: CaptureTarget, inputs: InputsDecision,
              record: CaptureRecord) -> list[Hint]:
        return []


class RecordsWithoutNeeding(RecordsInputs):
    needs_inputs: ClassVar[bool] = False


class RecordsInputsToo(RecordsInputs):
    mode: ClassVar[str] = "records-inputs-too"


@pytest.fixture
def job(tmp_path: Path) -> Iterator[TraceJob]:
    path = tmp_path / "inputs_before_capture_models.py"
    path.write_text(textwrap.dedent(MODELS).lstrip("\n"), encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    importlib.invalidate_caches()
    configured = ModuleConfig(inputs={"x": TensorSpec("float32", (3, 4))})
    yield TraceJob(path=str(path), workspace_root=str(tmp_path), config=EngineConfig(
        modules={"inputs_before_capture_models:Configured": configured}))
    sys.path.remove(str(tmp_path))
    sys.modules.pop("inputs_before_capture_models", None)


def test_a_mode_that_needs_inputs_gets_them_before_it_captures(job: TraceJob) -> None:
    capture = RecordsInputs()
    Job(job, lambda message: None, [capture]).run()
    assert capture.seen == {
        "Configured": ("config", {"x": "float32[3, 4]"}),
        # Annotated arguments (over what inference says), completed by inference.
        "Annotated": ("annotation", {"x": "float32[2, 3, 8, 8]", "tokens": "int64[2, 8]"}),
        "Inferred": ("inferred", {"image": "float32[2, 5, 32, 32]"}),
        # Inferred from the graph torch.fx recovered past the data-dependent `if`.
        "Untraceable": ("inferred", {"x": "float32[2, 8, 12]"}),
        # No layer decides `x`: it takes any shape, and gets the first plain one it runs on
        # (``fxcore.worker.inputs.from_layers.first_layer``), where torch.fx's graph has no layer to
        # read.
        "Undecided": ("inferred", {"x": "float32[2, 8]"}),
    }


def test_a_mode_that_does_not_need_inputs_gets_none(job: TraceJob) -> None:
    capture = RecordsWithoutNeeding()
    Job(job, lambda message: None, [capture]).run()
    assert set(capture.seen) == {"Configured", "Annotated", "Inferred", "Untraceable",
                                 "Undecided"}
    assert all(seen == (None, None) for seen in capture.seen.values())


def test_the_inputs_a_mode_gets_are_those_the_fx_shapes_use(job: TraceJob) -> None:
    """The fx capture decides its inputs from its own graph after capture, as before; a mode
    that needs them before gets the same ones."""
    needing = RecordsInputs()
    Job(job, lambda message: None, [needing]).run()
    sys.modules.pop("inputs_before_capture_models")  # a second job imports it afresh
    sent: list[WorkerMessage] = []
    Job(job, sent.append, [FxCapture()]).run()
    fx_inputs = {message.module.class_name: message.module.inputs for message in sent
                 if isinstance(message, Verdict)}
    assert set(fx_inputs) == set(needing.seen)
    for name, (origin, tensors) in needing.seen.items():
        shapes_inputs = fx_inputs[name]
        if name == "Undecided":
            # The fx shapes read the graph alone: no layer, no inputs (a plain shape is what
            # a mode that must run forward tries).
            assert shapes_inputs is None
        elif name != "Untraceable":  # fx shapes of a failed capture are a recovered note
            assert shapes_inputs is not None
            assert (shapes_inputs.origin, shapes_inputs.tensors) == (origin, tensors)


#: The searches of the inputs stage, in the order it runs them: each is given its share of
#: the time as its fifth argument.
SEARCHES = ("runs_on", "container_inputs", "layer_inputs", "related_inputs",
            "documented_inputs", "waveform_inputs")


def test_a_search_that_finds_no_inputs_takes_one_budget_once(
        job: TraceJob, monkeypatch: pytest.MonkeyPatch) -> None:
    """A class that runs on no candidate (a forward that lists a fake tensor's values, run
    on candidates of thousands of elements) spends each search's whole share. Together they
    stay within half the class's time-out, and a second mode that needs inputs reuses the
    first's finding that there are none: the searches once took 1.5 times the time-out, and
    again for the next mode (FX102 on export_python_data.py's ListedValues, judged for a GPU
    on PyPI's CUDA build of torch 2.13)."""
    clock = [0.0]
    spent: list[tuple[str, float]] = []

    def spending(name: str, search: Callable[..., Any]) -> Callable[..., Any]:
        def searched(*args: Any) -> Any:
            first = args[0] if isinstance(args[0], type) else type(args[0])
            if first.__name__ != "Undecided":
                return search(*args)
            seconds = max(args[4], 0.0)  # the share it is given, all spent
            spent.append((name, seconds))
            clock[0] += seconds
            return False if name == "runs_on" else None
        return searched

    for name in SEARCHES:
        monkeypatch.setattr(deciding, name, spending(name, getattr(deciding, name)))
    # The worker's budgets' clock (CPU time, and the wall clock of their backstops).
    monkeypatch.setattr(budget_clock, "time", SimpleNamespace(process_time=lambda: clock[0],
                                                              monotonic=lambda: clock[0]))
    job = dataclasses.replace(job, config=dataclasses.replace(job.config, timeout=4.0))
    first, second = RecordsInputs(), RecordsInputsToo()
    Job(job, lambda message: None, [first, second]).run()
    assert first.seen["Undecided"] == second.seen["Undecided"] == (None, None)
    # Each search once, the first two given a quarter of the time-out each, the rest none.
    assert spent == [("container_inputs", 1.0), ("layer_inputs", 1.0), ("related_inputs", 0.0),
                     ("documented_inputs", 0.0), ("waveform_inputs", 0.0)]
    assert clock[0] == 2.0
