"""Compile mode's loop of calls varies what a loader of variable-length batches varies,
together (``loop_inputs.loader_calls``): the batch, a number argument that says how many steps
a tensor holds, a list of per-step tensors beside a mask of as many columns; and the number of
steps a loop in ``forward`` runs over (a tensor's first dimension, a tuple's length). On the
classes of tests/corpus/recompiles/joint.py, which recompile beyond automatic dynamic shapes
only when those change together, and of tests/corpus/recompiles/steps.py, which step through
a sequence in Python, the loop on meta agrees with real ``torch.compile`` (backend eager) on
the CPU with real tensors and the same call sequence, computed in the same test: the frames
compiled, whether ``recompile_limit`` is reached, and the line of each recompilation's cause;
and the verdict's diagnostics are at the lines the corpus marks, through the CLI too."""

from __future__ import annotations

import contextlib
import inspect
import io
import json
from pathlib import Path
from typing import Any

import pytest
import recompile_runs
import source_modules
import torch
from recompile_runs import real_loop, worker_target

from fxcore.model.container_spec import InputSpec, materialized, parse_input
from fxcore.model.tensor_spec import TensorSpec
from fxcore.worker.capture.compile import recompile_loop
from fxcore.worker.capture.compile.compiling import CompileCapture, _run
from fxcore.worker.capture.compile.torch_hooks import graph_break_hook
from fxcore.worker.job.capture_target import CaptureTarget
from fxcore.worker.job.inputs_decision import InputsDecision
from fxcore.worker.job.job_context import JobContext

from cli_support import fx_lsp

pytestmark = [pytest.mark.matrix,
              pytest.mark.skipif(not recompile_loop.can_observe(),
                                 reason="this torch reports no guard failures to a hook")]

CORPORA = {name: Path(__file__).parents[4] / "corpus" / "recompiles" / f"{name}.py"
           for name in ("joint", "steps")}
CODES = {"every-call": "FX505", "every-size": "FX506", "every-number": "FX507",
         "every-length": "FX508", "swapped-module": "FX510"}
#: The kind of ``Hint.recompile`` each code carries.
SUBJECT_KINDS = {"FX506": "size", "FX507": "number", "FX508": "length"}


def corpus_module(corpus: str):
    return source_modules.corpus_module(CORPORA[corpus], f"recompile_{corpus}_corpus")


CLASSES = [(corpus, name) for corpus in CORPORA for name in sorted(
    corpus_module(corpus).EXAMPLE_INPUTS)]


def given(corpus: str, name: str) -> tuple[dict[str, InputSpec], dict[str, Any]]:
    """The class's tensor inputs (specs) and its number arguments."""
    specs: dict[str, InputSpec] = {}
    numbers = {}
    for argument, value in corpus_module(corpus).EXAMPLE_INPUTS[name].items():
        if isinstance(value, str):
            specs[argument] = parse_input(value)
        elif isinstance(value, tuple):
            specs[argument] = TensorSpec("float32", value)
        else:
            numbers[argument] = value
    return specs, numbers


def real_torch(corpus: str, name: str) -> recompile_loop.LoopOutcome:
    """The same calls on a real instance, on the CPU, with real tensors (ones, as the meta
    run's stand-ins answer), compiled with the eager backend."""
    torch.manual_seed(0)
    specs, numbers = given(corpus, name)
    tensors = {argument: materialized(spec, lambda leaf: torch.ones(leaf.shape))
               for argument, spec in specs.items()}
    return real_loop(getattr(corpus_module(corpus), name)(), tensors, numbers)


def meta_target(corpus: str, name: str) -> tuple[JobContext, CaptureTarget, InputsDecision]:
    """The class built as a worker builds it (on meta), with the corpus's inputs."""
    specs, numbers = given(corpus, name)
    return worker_target(CORPORA[corpus], getattr(corpus_module(corpus), name),
                         InputsDecision(specs, values=numbers))


def causes(corpus: str, outcome: recompile_loop.LoopOutcome) -> list[tuple[str, int | None]]:
    return recompile_runs.causes(outcome, CORPORA[corpus], CODES)


def marked(corpus: str, name: str) -> list[tuple[str, int]]:
    return recompile_runs.marked(CORPORA[corpus], name, CODES)


@pytest.mark.slow
@pytest.mark.parametrize(("corpus", "name"), CLASSES)
def test_the_loaders_calls_on_meta_are_real_torchs(corpus: str, name: str) -> None:
    with contextlib.redirect_stdout(io.StringIO()):
        real = real_torch(corpus, name)
        _, target, inputs = meta_target(corpus, name)
        run = _run(target, inputs, graph_break_hook(), True, loop_seconds=120.0)
    assert run.loop is not None and run.loop.finished
    assert (run.loop.frames, run.loop.limit_reached) == (real.frames, real.limit_reached)
    assert causes(corpus, run.loop) == causes(corpus, real) == marked(corpus, name)


@pytest.mark.parametrize(("corpus", "name"), CLASSES)
def test_diagnostics_at_the_marked_lines(corpus: str, name: str) -> None:
    context, target, inputs = meta_target(corpus, name)
    with contextlib.redirect_stdout(io.StringIO()):
        record = CompileCapture().capture(context, target, inputs)
    assert [(hint.code, hint.line) for hint in record.hints] == marked(corpus, name)
    assert all(hint.path == str(CORPORA[corpus]) for hint in record.hints)
    # What recompiles, as the quick fixes read it: an argument of forward's, by kind.
    arguments = inspect.signature(getattr(corpus_module(corpus), name).forward).parameters
    assert [(hint.recompile.kind, hint.recompile.name in arguments)
            for hint in record.hints if hint.recompile is not None] == [
        (SUBJECT_KINDS[hint.code], True) for hint in record.hints]


@pytest.mark.slow
@pytest.mark.parametrize("corpus", CORPORA)
def test_the_cli_gives_every_class_a_verdict_and_the_marked_diagnostics(corpus: str) -> None:
    """Through the CLI and its worker, with the inputs the inputs stage finds (a list of steps
    beside a mask from its annotation): every class has a compile verdict, and the
    recompilations are at the marked lines."""
    path = CORPORA[corpus]
    result = fx_lsp("check", str(path), "--mode", "compile", "--no-cache", "--format", "json",
                    cwd=path.parent)
    report = json.loads(result.stdout)
    names = sorted(corpus_module(corpus).EXAMPLE_INPUTS)
    statuses = {module["qualified_name"].split(":")[1]: module["status"]
                for module in report["modules"]}
    no_inputs = [module["qualified_name"] for module in report["modules"]
                 if "no example inputs" in (module.get("reason") or "")]
    assert no_inputs == []
    assert statuses == {name: "traceable" for name in names}
    found: dict[str, list[tuple[str, int]]] = {name: [] for name in names}
    for item in report["diagnostics"]:
        for qualified in item["classes"]:
            found[qualified.split(":")[-1]].append((item["code"], item["line"]))
    assert found == {name: marked(corpus, name) for name in names}
