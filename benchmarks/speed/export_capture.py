"""Per-class time of the export capture in a warm process, against the fx capture of the
same instance: a Llama-2-7B-sized decoder block and a ResNet-50 bottleneck block, both built
on the meta device (``benchmarks/models``), inputs of batch size 2.

Each capture runs once to warm up, then ``--runs`` times; the median is printed, and the
ratio export / fx of medians measured in this same run.

    python3 -m benchmarks run speed export_capture -- [--runs 5]

Target: export under 1 s per class in a warm worker. Printed, never asserted.
"""

from __future__ import annotations

import argparse
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
from fxcore.model.tensor_spec import parse_spec
from fxcore.worker.capture.base import Capture
from fxcore.worker.capture.export.exporting import ExportCapture
from fxcore.worker.capture.fx.tracing import FxCapture
from fxcore.worker.job.capture_target import CaptureTarget
from fxcore.worker.job.inputs_decision import InputsDecision
from fxcore.worker.job.job_context import JobContext
from fxcore.workspace.discovery import top_level_classes

TARGET_SECONDS = 1.0


def target(file: str, name: str, make: Callable[[type], torch.nn.Module],
           inputs: dict[str, str]) -> tuple[JobContext, CaptureTarget, InputsDecision]:
    path = os.path.join(MODELS, file)
    module = __import__(file.removesuffix(".py"))
    cls = getattr(module, name)
    with torch.device("meta"):
        model = make(cls)
    with open(path, encoding="utf-8") as handle:
        source = top_level_classes(handle.read())[name]
    context = JobContext(TraceJob(path=path, workspace_root=MODELS, config=EngineConfig()))
    specs = {arg: parse_spec(text) for arg, text in inputs.items()}
    return context, CaptureTarget(cls, source, model, "meta"), InputsDecision(specs)


def timed(capture: Capture, context: JobContext, built: CaptureTarget, inputs: InputsDecision,
          runs: int) -> float:
    """Median seconds of ``runs`` captures after one to warm up; each must succeed."""
    seconds = []
    for _ in range(runs + 1):
        started = time.perf_counter()
        record = capture.capture(context, built, inputs)
        seconds.append(time.perf_counter() - started)
        assert record.complete, [failure.message for failure in record.failures]
    return statistics.median(seconds[1:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    sys.path.insert(0, MODELS)
    print(machine_line())
    print(f"torch {torch.__version__}; median of {runs} captures after one warm-up")
    cases = [
        ("Llama-2-7B decoder block", "llama.py", "DecoderLayer",
         lambda cls: cls(4096, 32, 11008, 1e-5),
         {"x": "float32[2, 128, 4096]", "cos": "float32[2, 128, 128]",
          "sin": "float32[2, 128, 128]"}),
        ("ResNet-50 bottleneck block", "resnet50.py", "Bottleneck",
         lambda cls: cls(256, 64), {"x": "float32[2, 256, 56, 56]"}),
    ]
    rows = []
    for title, file, name, make, inputs in cases:
        context, built, decided = target(file, name, make, inputs)
        export = timed(ExportCapture(), context, built, decided, runs)
        fx = timed(FxCapture(), context, built, decided, runs)
        met = "met" if export < TARGET_SECONDS else "missed"
        rows.append([title, f"{export * 1e3:.1f} ms", f"{fx * 1e3:.1f} ms", f"{export / fx:.1f}x",
                     f"export < {TARGET_SECONDS:.0f} s: {met}"])
    emit("export_capture", markdown(
        [f"class (median of {runs})", "export", "fx", "export / fx", "target"], rows))


if __name__ == "__main__":
    main()
