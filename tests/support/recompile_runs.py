"""What the recompile corpus tests share (test_recompiles.py, test_recompiles_joint.py): real
torch's loop of calls on a real instance, the class built as a worker builds it, and the lines
of a loop's causes and of the corpus's markers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from real_compile import eager_compiled

from fxcore.model.job_spec import EngineConfig, TraceJob
from fxcore.worker.building.instances import Built, build_class
from fxcore.worker.capture.compile import container_lengths, recompile_loop
from fxcore.worker.job.capture_target import CaptureTarget
from fxcore.worker.job.inputs_decision import InputsDecision
from fxcore.worker.job.job_context import JobContext
from fxcore.workspace.discovery import top_level_classes

from engine_support import marked_line


def real_loop(model: torch.nn.Module, tensors: dict[str, Any], numbers: dict[str, Any]
              ) -> recompile_loop.LoopOutcome:
    """The loop's calls on ``model``, a real instance on the CPU, compiled with the eager
    backend, after a first call with ``tensors`` and ``numbers``."""
    compiled, observer = eager_compiled(model)

    def call(inputs: dict[str, object], values: dict[str, object]) -> None:
        with torch.no_grad():
            compiled(**inputs, **values)

    call(tensors, numbers)
    try:
        return recompile_loop.run_loop(call, observer, tensors, numbers, numbers, 120.0,
                                       container_lengths.varied(model, tensors))
    finally:
        torch._dynamo.reset()


def worker_target(corpus: Path, cls: type, inputs: InputsDecision
                  ) -> tuple[JobContext, CaptureTarget, InputsDecision]:
    """``cls`` of ``corpus`` built as a worker builds it (on meta), with ``inputs``."""
    # The loop gets a quarter of the time-out: a loaded test machine (the matrix beside other
    # tiers) must not cut it short, which would be the budget's answer, not the loop's.
    context = JobContext(TraceJob(path=str(corpus), workspace_root=str(corpus.parent),
                                  config=EngineConfig(timeout=240.0)))
    source = top_level_classes(corpus.read_text(encoding="utf-8"))[cls.__name__]
    built = build_class(context, cls, source)
    assert isinstance(built, Built), built
    return context, CaptureTarget(cls, source, built.model, built.instantiated_on,
                                  built.concrete_args), inputs


def causes(outcome: recompile_loop.LoopOutcome, corpus: Path, codes: dict[str, str]
           ) -> list[tuple[str, int | None]]:
    """Each cause of ``outcome`` as its code and its line in ``corpus``."""
    return [(codes[cause.kind], next((position.line for position in reversed(cause.stack)
                                      if position.filename == str(corpus)), None))
            for cause in outcome.causes]


def marked(corpus: Path, name: str, codes: dict[str, str]) -> list[tuple[str, int]]:
    """The codes ``name``'s source marks (``# FX506``), each at its line."""
    found = [(code, marked_line(corpus, name, f"# {code}")) for code in codes.values()]
    return [(code, line) for code, line in found if line is not None]
