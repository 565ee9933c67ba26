"""Per-class time of the compile capture mode in a warm process, against the fx capture of
the same instance: a Llama-2-7B-sized decoder block (dim 4096, 32 heads, hidden 11008) and a
ResNet-50 bottleneck block (256 -> 64 -> 256 channels at 56x56), both built on meta, inputs
at batch size 2. Each mode runs once to warm up, then ``--runs`` times; the figures are
medians, and the ratio compile / fx is measured in this same run.

    python3 -m benchmarks run speed compile_capture -- [--runs 5]
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import time
from collections.abc import Callable

import torch

from benchmarks.paths import MODELS
from benchmarks.provenance import machine_line
from benchmarks.tables import emit, markdown
from fxcore.model.job_spec import EngineConfig, TraceJob
from fxcore.model.tensor_spec import TensorSpec
from fxcore.worker.capture.compile.compiling import CompileCapture
from fxcore.worker.capture.fx.tracing import FxCapture
from fxcore.worker.job.capture_target import CaptureTarget
from fxcore.worker.job.inputs_decision import InputsDecision
from fxcore.worker.job.job_context import JobContext
from fxcore.workspace.discovery import top_level_classes


def target(file: str, cls: type, model_args: tuple[object, ...],
           inputs: dict[str, TensorSpec]) -> tuple[JobContext, CaptureTarget, InputsDecision]:
    path = os.path.join(MODELS, file)
    context = JobContext(TraceJob(path=path, workspace_root=MODELS, config=EngineConfig()))
    with open(path, encoding="utf-8") as handle:
        source = top_level_classes(handle.read())[cls.__name__]
    with torch.device("meta"):
        model = cls(*model_args)
    return context, CaptureTarget(cls, source, model, "meta"), InputsDecision(inputs)


def median_seconds(run: Callable[[], object], runs: int) -> float:
    run()  # warm-up: imports and dynamo's first-use setup are not per class
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def block_cases() -> dict[str, tuple[JobContext, CaptureTarget, InputsDecision]]:
    """The two blocks, built on meta, with their inputs."""
    sys.path.insert(0, MODELS)
    from llama import DecoderLayer
    from resnet50 import Bottleneck

    return {
        "Llama-2-7B decoder block": target(
            "llama.py", DecoderLayer, (4096, 32, 11008, 1e-5),
            {"x": TensorSpec("float32", (2, 128, 4096)),
             "cos": TensorSpec("float32", (2, 128, 128)),
             "sin": TensorSpec("float32", (2, 128, 128))}),
        "ResNet-50 bottleneck block": target(
            "resnet50.py", Bottleneck, (256, 64),
            {"x": TensorSpec("float32", (2, 256, 56, 56))}),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    cases = block_cases()
    print(machine_line())
    rows = []
    for name, (context, case, inputs) in cases.items():
        fx = median_seconds(functools.partial(FxCapture().capture, context, case, inputs), runs)
        record = CompileCapture().capture(context, case, inputs)
        assert not record.failures, record.failures
        compiled = median_seconds(functools.partial(CompileCapture().capture, context, case,
                                                    inputs), runs)
        rows.append([name, f"{compiled * 1e3:.1f} ms", f"{fx * 1e3:.1f} ms",
                     f"{compiled / fx:.1f}x", record.graph_count])
    emit("compile_capture", markdown(
        [f"class (median of {runs})", "compile", "fx", "compile / fx", "graphs"], rows))


if __name__ == "__main__":
    main()
