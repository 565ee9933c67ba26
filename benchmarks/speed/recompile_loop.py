"""What the compile mode's loop of calls (``recompile_loop``) adds to a class's compile capture:
the capture with the loop against the capture of one call (the loop off, as on a torch whose
dynamo takes no ``guard_fail_fn``), on the same instance in the same warm process, in CPU
seconds of this process (``time.process_time``, which other work on a shared machine does not
inflate) and wall seconds. Cases: the two blocks of ``compile_capture``, every class of the
compile corpus (tests/corpus/compile, inputs ``float32[2, 8]`` as its test gives them) and of
the recompile corpus (tests/corpus/recompiles, its ``EXAMPLE_INPUTS``).

    python3 -m benchmarks run speed recompile_loop
"""

from __future__ import annotations

import contextlib
import importlib.util
import inspect
import io
import os
import sys
import time
from collections.abc import Iterator
from unittest import mock

from benchmarks.paths import REPOSITORY
from benchmarks.provenance import machine_line
from benchmarks.speed.compile_capture import block_cases
from benchmarks.tables import emit, markdown
from fxcore.model.container_spec import parse_input
from fxcore.model.job_spec import EngineConfig, TraceJob
from fxcore.model.tensor_spec import TensorSpec
from fxcore.worker.building.instances import Built, build_class
from fxcore.worker.capture.compile import recompile_loop
from fxcore.worker.capture.compile.compiling import CompileCapture
from fxcore.worker.shared.capture_target import CaptureTarget
from fxcore.worker.shared.inputs_decision import InputsDecision
from fxcore.worker.shared.job_context import JobContext
from fxcore.workspace.discovery import top_level_classes

CORPORA = os.path.join(REPOSITORY, "tests", "corpus")


def corpus_cases(folder: str) -> Iterator[tuple[JobContext, CaptureTarget, InputsDecision]]:
    """Each class of each file of a corpus folder, built on meta as a worker builds it."""
    for file in sorted(os.listdir(os.path.join(CORPORA, folder))):
        if not file.endswith(".py"):
            continue
        path = os.path.join(CORPORA, folder, file)
        spec = importlib.util.spec_from_file_location(f"bench_{folder}_{file[:-3]}", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        shapes = getattr(module, "EXAMPLE_INPUTS", {})
        context = JobContext(TraceJob(path=path, workspace_root=os.path.dirname(path),
                                      config=EngineConfig()))
        with open(path, encoding="utf-8") as handle:
            sources = top_level_classes(handle.read())
        for name, source in sources.items():
            cls = getattr(module, name, None)
            if not isinstance(cls, type) or name == "EXAMPLE_INPUTS":
                continue
            built = build_class(context, cls, source)
            given = shapes.get(name, (2, 8))
            # A container's inputs are written as the CLI takes them (``[float32[2, 8], ...]``),
            # under forward's first argument's name.
            spec = parse_input(given) if isinstance(given, str) else TensorSpec("float32", given)
            argument = [*inspect.signature(cls.forward).parameters][1]
            inputs = {argument: spec}
            if isinstance(built, Built):
                yield context, CaptureTarget(cls, source, built.model, built.instantiated_on,
                                             built.concrete_args), InputsDecision(inputs)


def seconds(context: JobContext, target: CaptureTarget, inputs: InputsDecision,
            loop: bool) -> tuple[float, float]:
    """CPU and wall seconds of one compile capture, with or without the loop."""
    off = contextlib.nullcontext() if loop else mock.patch.object(
        recompile_loop, "can_observe", lambda: False)
    with off, contextlib.redirect_stdout(io.StringIO()):
        cpu, wall = time.process_time(), time.perf_counter()
        CompileCapture().capture(context, target, inputs)
        return time.process_time() - cpu, time.perf_counter() - wall


def main() -> None:
    print(machine_line())
    groups = {"compile_capture's two blocks": list(block_cases().values()),
              "compile corpus": list(corpus_cases("compile")),
              "recompile corpus": list(corpus_cases("recompiles"))}
    CompileCapture().warm()
    rows = []
    for name, cases in groups.items():
        totals = {True: [0.0, 0.0], False: [0.0, 0.0]}
        for context, target, inputs in cases:
            for loop in (False, True):  # alternated, so that load changes hit both alike
                cpu, wall = seconds(context, target, inputs, loop)
                totals[loop][0] += cpu
                totals[loop][1] += wall
        one, looped = totals[False], totals[True]
        rows.append([name, len(cases), f"{one[0]:.1f} s", f"{looped[0]:.1f} s",
                     f"{looped[0] / one[0]:.2f}x", f"{one[1]:.1f} s", f"{looped[1]:.1f} s"])
    emit("recompile_loop", markdown(
        ["classes", "count", "CPU, one call", "CPU, loop", "loop / one call", "wall, one call",
         "wall, loop"], rows))


if __name__ == "__main__":
    main()
