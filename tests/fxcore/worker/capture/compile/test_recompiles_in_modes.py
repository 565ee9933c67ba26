"""Compile mode's loop of calls on classes judged in both ``nn.Module`` modes
(tests/corpus/recompiles/training_modes.py): the engine reports each recompilation once, where
real ``torch.compile`` (backend eager, on the CPU, real tensors, the same call sequence) finds
it in either mode; the loop runs once where ``training`` only picks tensor computations or is
read only by methods a call does not run, and again in the second mode where the class
recompiles in one mode alone."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
import torch
from real_compile import eager_compiled
from source_modules import corpus_module

from fxcore.host.engine import Engine
from fxcore.model.container_spec import materialized, parse_input
from fxcore.model.job_spec import EngineConfig, TraceJob
from fxcore.model.module_modes import EVAL, TRAIN
from fxcore.model.results import FileResult
from fxcore.worker.capture.compile import container_lengths, recompile_loop
from fxcore.worker.module_modes.judging import ONE_CAPTURE_UNREACHED_NOTE, ONE_LOOP_NOTE

from engine_support import check_job, marked_line

pytestmark = [pytest.mark.slow, pytest.mark.matrix,
              pytest.mark.skipif(not recompile_loop.can_observe(),
                                 reason="this torch reports no guard failures to a hook")]

CORPUS = Path(__file__).parents[4] / "corpus" / "recompiles" / "training_modes.py"
CODES = {"every-call": "FX505", "every-size": "FX506", "every-number": "FX507",
         "every-length": "FX508"}


def corpus_class(name: str) -> type[torch.nn.Module]:
    return getattr(corpus_module(CORPUS, "training_modes_corpus"), name)


def real_causes(name: str, mode: str, inputs: dict[str, str]) -> set[tuple[str, int | None]]:
    """The recompilations real torch finds on a real instance in ``mode``, called as the loop
    calls it on the inputs the engine decided."""
    torch.manual_seed(0)
    model = corpus_class(name)().train(mode == TRAIN)
    compiled, observer = eager_compiled(model)
    tensors = {argument: materialized(parse_input(spec), lambda leaf: torch.ones(leaf.shape))
               for argument, spec in inputs.items()}

    def call(given: dict[str, object], values: dict[str, object]) -> None:
        with torch.no_grad():
            compiled(**given, **values)

    call(tensors, {})
    try:
        outcome = recompile_loop.run_loop(call, observer, tensors, {}, {}, 120.0,
                                          container_lengths.varied(model, tensors))
    finally:
        torch._dynamo.reset()
    assert outcome.finished
    return {(CODES[cause.kind], next((position.line for position in reversed(cause.stack)
                                      if position.filename == str(CORPUS)), None))
            for cause in outcome.causes}


@pytest.fixture(scope="module")
def checked(engine: Engine) -> FileResult:
    """The corpus file checked in compile mode, once for every test."""
    return check_job(engine, TraceJob(path=str(CORPUS), workspace_root=str(CORPUS.parent),
                                      config=EngineConfig(modes=("compile",), timeout=240.0)))


ONE_LOOP = ONE_LOOP_NOTE.format(first=EVAL, other=TRAIN)
ONE_CAPTURE = ONE_CAPTURE_UNREACHED_NOTE.format(
    readers="`CountedWithModeSwitch.predict`, `CountedWithModeSwitch.train`")


@pytest.mark.parametrize("name, modes_recompiling, note", [
    ("CountedDropout", {TRAIN, EVAL}, ONE_LOOP),
    # `training` read only where no call runs it: compiled (and looped) once, in train mode.
    ("CountedWithModeSwitch", {TRAIN, EVAL}, ONE_CAPTURE),
    ("TrainStepCounter", {TRAIN}, None)])
def test_each_recompilation_once_as_real_torch_finds_it_in_either_mode(
        checked: FileResult, name: str, modes_recompiling: set[str], note: str | None) -> None:
    (module,) = [module for module in checked.modules if module.class_name == name]
    assert module.module_modes == [TRAIN, EVAL]
    assert module.inputs is not None
    inputs = module.inputs.tensors
    with contextlib.redirect_stdout(io.StringIO()):
        real = {mode: real_causes(name, mode, inputs) for mode in (TRAIN, EVAL)}
    line = marked_line(CORPUS, name, "# FX505")
    assert {mode for mode, causes in real.items() if causes} == modes_recompiling
    assert set().union(*real.values()) == {("FX505", line)}
    assert [(hint.code, hint.line) for hint in module.hints] == [("FX505", line)]
    assert [text for text in module.capture_notes if text in (ONE_LOOP, ONE_CAPTURE)] == (
        [note] if note else [])
