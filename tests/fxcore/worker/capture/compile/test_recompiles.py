"""Compile mode's loop of calls (``recompile_loop``) on the recompile corpus
(tests/corpus/recompiles) agrees with real ``torch.compile`` (backend eager) on the CPU with
real tensors and the same call sequence, computed in the same test: the frames compiled, whether
``recompile_limit`` is reached, and the line of each recompilation's cause; and the verdict's
diagnostics (FX505-FX507) are at the lines the corpus marks, none on a class that recompiles
only as automatic dynamic shapes do."""

from __future__ import annotations

import contextlib
import io
import time
from pathlib import Path

import pytest
import recompile_runs
import source_modules
import torch
from recompile_runs import real_loop, worker_target

from fxcore.model.container_spec import InputSpec, materialized, parse_input
from fxcore.model.tensor_spec import TensorSpec
from fxcore.worker.capture.compile import recompile_loop
from fxcore.worker.capture.compile.compiling import CompileCapture, _Run, _run
from fxcore.worker.capture.compile.fake_cpu import fake_cpu_reason
from fxcore.worker.capture.compile.recompile_hints import SLOWED, loop_notes
from fxcore.worker.capture.compile.torch_hooks import graph_break_hook
from fxcore.worker.job.capture_target import CaptureTarget
from fxcore.worker.job.inputs_decision import InputsDecision
from fxcore.worker.job.job_context import JobContext

from engine_support import marked_line

pytestmark = [pytest.mark.matrix,
              pytest.mark.skipif(not recompile_loop.can_observe(),
                                 reason="this torch reports no guard failures to a hook")]

CORPUS = Path(__file__).parents[4] / "corpus" / "recompiles" / "recompiles.py"
#: Classes whose recompilations depend on numbers read out of tensor data: no loop on meta.
READS_DATA = {"ItemShape"}
CODES = {"every-call": "FX505", "every-size": "FX506", "every-number": "FX507",
         "every-length": "FX508", "swapped-module": "FX510"}


def corpus_module():
    return source_modules.corpus_module(CORPUS, "recompile_corpus")


NAMES = sorted(corpus_module().EXAMPLE_INPUTS)


def input_spec(name: str) -> InputSpec:
    """The class's ``x``: a float32 tensor of the corpus's shape, or its container."""
    given = corpus_module().EXAMPLE_INPUTS[name]
    return parse_input(given) if isinstance(given, str) else TensorSpec("float32", given)


def meta_target(name: str) -> tuple[JobContext, CaptureTarget, InputsDecision]:
    """The class built as a worker builds it (on meta), with the corpus's inputs."""
    return worker_target(CORPUS, getattr(corpus_module(), name),
                         InputsDecision({"x": input_spec(name)}))


def real_torch(name: str) -> recompile_loop.LoopOutcome:
    """The same calls on a real instance, on the CPU, with real tensors (ones, as the meta
    run's stand-ins answer), compiled with the eager backend."""
    torch.manual_seed(0)
    model = getattr(corpus_module(), name)()
    tensors = {"x": materialized(input_spec(name), lambda leaf: torch.ones(leaf.shape))}
    return real_loop(model, tensors, recompile_loop.number_arguments(model, {}))


def meta_run(target: CaptureTarget, inputs: InputsDecision) -> _Run:
    """The capture's run with its loop, on fake CPU tensors where the capture takes them (a
    class that makes CPU tensors of its own)."""
    run = _run(target, inputs, graph_break_hook(), True, loop_seconds=120.0)
    if fake_cpu_reason(run.ending_error, run.stops) is not None:
        run = _run(target, inputs, graph_break_hook(), True, device=torch.device("cpu"),
                   loop_seconds=120.0)
    return run


def causes(outcome: recompile_loop.LoopOutcome) -> list[tuple[str, int | None]]:
    return recompile_runs.causes(outcome, CORPUS, CODES)


def marked(name: str) -> list[tuple[str, int]]:
    return recompile_runs.marked(CORPUS, name, CODES)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_the_loop_on_meta_is_real_torchs(name: str) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        real = real_torch(name)
        _, target, inputs = meta_target(name)
        run = meta_run(target, inputs)
    assert run.loop is not None
    if run.loop.not_run is not None:  # what recompiles depends on data meta has not
        assert name in READS_DATA
        return
    assert run.loop.finished
    assert (run.loop.frames, run.loop.limit_reached) == (real.frames, real.limit_reached)
    assert causes(run.loop) == causes(real) == marked(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_diagnostics_at_the_marked_lines(name: str) -> None:
    context, target, inputs = meta_target(name)
    with contextlib.redirect_stdout(io.StringIO()):
        record = CompileCapture().capture(context, target, inputs)
    assert [(hint.code, hint.line) for hint in record.hints] == marked(name)
    assert all(hint.path == str(CORPUS) for hint in record.hints)



def test_a_counter_forward_increments_is_fx505_with_torchs_guard_and_hint() -> None:
    """The fast tier's check of the loop: an integer attribute ``forward`` increments reaches
    the limit: FX505 at its line, PyTorch's guard and hint in the message."""
    context, target, inputs = meta_target("StepCounter")
    (counter,) = CompileCapture().capture(context, target, inputs).hints
    assert (counter.code, counter.line) == ("FX505", marked_line(CORPUS, "StepCounter",
                                                                  "# FX505"))
    assert "self.step ==" in counter.message
    assert "HINT: torch.compile considers integer attributes" in counter.message


def test_a_loop_out_of_time_leaves_the_first_calls_verdict_and_says_so() -> None:
    _, target, inputs = meta_target("StepCounter")
    run = _run(target, inputs, graph_break_hook(), True, loop_seconds=1e-9)
    assert run.loop is not None and not run.loop.finished and run.loop.causes == []
    assert run.ending_error is None and len(run.graphs) == 1  # the first call's verdict
    (note,) = loop_notes(run.loop)
    assert note.startswith("the loop of calls that looks for recompilations ran out of CPU time")


class Waits(torch.nn.Module):
    """A class whose every call waits (``time.sleep``: a data loader, a lock, a GPU it syncs
    with) and costs next to no CPU time."""

    WAIT_SECONDS = 0.6

    def forward(self, x: torch.Tensor, scale: int = 2) -> torch.Tensor:
        time.sleep(self.WAIT_SECONDS)
        return x * scale


def waiting_loop(seconds: float) -> recompile_loop.LoopOutcome:
    """``Waits``'s loop: the same inputs again (one call), three batch sizes, three values of
    ``scale``; the loop checks its time before each, so before the values after 4 waits."""
    model = Waits()

    def call(inputs: dict[str, object], values: dict[str, object]) -> None:
        model(**inputs, **values)

    return recompile_loop.run_loop(call, recompile_loop.Observer(), {"x": torch.ones(4)},
                                   {"scale": 2}, {"scale": 2}, seconds)


def test_the_loop_counts_its_cpu_time_not_the_time_the_calls_wait() -> None:
    """4 waits (2.4 s) before the values are past two seconds of wall-clock time, which cut the
    loop short when it counted that; its CPU time is not spent (two seconds, which a loaded
    machine's compiles of seven small calls do not reach), and every call is made."""
    outcome = waiting_loop(seconds=2.0)
    assert (outcome.finished, outcome.calls) == (True, 7)
    assert not outcome.slowed and loop_notes(outcome) == []


@pytest.mark.usefixtures("unscaled_timeouts")
def test_a_loop_slowed_past_twice_its_time_stops_and_says_the_load_did() -> None:
    """One wait (0.6 s) is past twice 0.1 s: the wall-clock backstop, which ends a loop the
    machine's load slows before the host's time-out ends the class, stops it (the time-out
    scale at 1: the backstop is this test's subject)."""
    outcome = waiting_loop(seconds=0.1)
    assert (outcome.finished, outcome.slowed, outcome.calls) == (False, True, 1)
    assert loop_notes(outcome) == [SLOWED.format(calls=1)]
