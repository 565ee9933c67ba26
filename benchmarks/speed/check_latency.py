"""Check latency of one edited file through a warm worker, against a fresh Python process.

The editor case: the language server keeps an ``Engine`` whose zygote has imported torch,
and every edit sends the unsaved buffer as an overlay. The naive alternative is a fresh
``python -c`` that imports torch and traces the module. Both are measured in the same run
because the machine is shared and absolute figures drift; the ratio is what to compare.

    python3 -m benchmarks run speed check_latency -- [--file examples/models/gated.py] [--edits 30]
                                       [--fresh-runs 7]

Targets: warm check at least 15x faster than the fresh process, and under 150 ms
median. Printed, never asserted.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass

from benchmarks.paths import REPOSITORY
from benchmarks.procfs import children_of, stat_cpu_seconds
from benchmarks.provenance import machine_line
from benchmarks.tables import emit, markdown, met
from benchmarks.timing import describe, milliseconds, percentile
from fxcore.checking.pipeline import Pipeline
from fxcore.host.engine import Engine
from fxcore.model.job_spec import TraceJob
from fxcore.model.results import FileResult
from fxcore.workspace.paths import find_workspace_root, import_location

DEFAULT_FILES = [
    os.path.join(REPOSITORY, "examples", "models", "gated.py"),
    os.path.join(REPOSITORY, "examples", "models", "mlp.py"),
]
TARGET_RATIO = 15.0
TARGET_MEDIAN_SECONDS = 0.150


def statuses(result: FileResult) -> list[tuple[str, str]]:
    return [(module.class_name, module.status) for module in result.modules]


def edited_text(original: str, edit_number: int) -> str:
    """A small edit, as typing makes: a new comment line at the top shifts every position,
    and a changed constant at the end changes the module's code object."""
    return f"# edit {edit_number}\n{original}\n_EDIT_NUMBER = {edit_number}\n"


@dataclass
class Warm:
    walls: list[float]
    engine_seconds: list[float]
    trace_seconds: list[float]
    #: Mean user + system time of a job's child, from the zygote's reaped-children counters
    #: (10 ms clock ticks, so only a mean over many edits means anything).
    mean_child_cpu: float | None
    reference: FileResult


def measure_warm(pipeline: Pipeline, path: str, root: str, edits: int) -> Warm:
    """Wall time per ``pipeline.result_of`` of an edited buffer, the engine's own figure for the
    job, and the time spent in ``tracer.trace`` (all classes of the file)."""
    with open(path, encoding="utf-8") as handle:
        original = handle.read()
    # Warm-up: the first job waits for the zygote's torch import; two more let the
    # page cache and the zygote's lazily imported modules settle.
    reference = pipeline.result_of(TraceJob(path=path, workspace_root=root))
    for warm_edit in range(2):
        pipeline.result_of(TraceJob(path=path, workspace_root=root,
                                    overlays={path: edited_text(original, -1 - warm_edit)}))
    walls: list[float] = []
    engine_seconds: list[float] = []
    trace_seconds: list[float] = []
    zygotes = children_of(os.getpid())
    children_cpu_before = stat_cpu_seconds(zygotes[0], children=True) if zygotes else None
    for edit_number in range(edits):
        job = TraceJob(path=path, workspace_root=root,
                       overlays={path: edited_text(original, edit_number)})
        started = time.perf_counter()
        result = pipeline.result_of(job)
        walls.append(time.perf_counter() - started)
        engine_seconds.append(result.seconds)
        trace_seconds.append(sum(module.trace_seconds for module in result.modules))
        if statuses(result) != statuses(reference) or result.errors:
            print(f"  warning: edit {edit_number} gave {statuses(result)} {result.errors}",
                  file=sys.stderr)
    mean_child_cpu = None
    if children_cpu_before is not None:
        time.sleep(0.2)  # the zygote reaps the last child asynchronously
        children_cpu = stat_cpu_seconds(zygotes[0], children=True)
        if children_cpu is not None:
            mean_child_cpu = (children_cpu - children_cpu_before) / edits
    return Warm(walls, engine_seconds, trace_seconds, mean_child_cpu, reference)


def fresh_process_script(path: str, class_names: list[str]) -> str:
    """What a user without a warm worker runs: import torch, import the file, build each
    class and trace it (a failure to trace is an answer too, so it is caught)."""
    location = import_location(path)
    return textwrap.dedent(f"""
        import importlib, sys
        import torch, torch.fx
        sys.path.insert(0, {location.sys_path_entry!r})
        module = importlib.import_module({location.module_name!r})
        for name in {class_names!r}:
            try:
                torch.fx.symbolic_trace(getattr(module, name)())
            except Exception as error:
                print(name, type(error).__name__)
    """)


def measure_fresh(path: str, class_names: list[str], runs: int) -> list[float]:
    script = fresh_process_script(path, class_names)
    durations = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", script], check=True, capture_output=True,
                       cwd=REPOSITORY)
        durations.append(time.perf_counter() - started)
    return durations


def benchmark_file(pipeline: Pipeline, path: str, edits: int, fresh_runs: int) -> list[str]:
    """Prints the file's figures; returns its row of the table."""
    root = find_workspace_root(path)
    print(f"\n== {os.path.relpath(path, REPOSITORY)} (workspace {os.path.relpath(root)})")
    warm = measure_warm(pipeline, path, root, edits)
    traced = [m.class_name for m in warm.reference.modules if m.status != "not-traced"]
    print(f"   classes: "
          f"{', '.join(f'{name} ({status})' for name, status in statuses(warm.reference))}")
    fresh = measure_fresh(path, traced, fresh_runs)
    warm_median = statistics.median(warm.walls)
    fresh_median = statistics.median(fresh)
    print(f"   warm worker, {edits} edits  : {describe(warm.walls)}")
    print(f"     engine's FileResult.seconds: {describe(warm.engine_seconds)}")
    print(f"     of which tracer.trace      : {describe(warm.trace_seconds)}")
    if warm.mean_child_cpu is not None:
        # On a shared machine wall times include waiting for a core; CPU time does not.
        print(f"     mean CPU time of the child : {warm.mean_child_cpu * 1e3:8.1f} ms "
              "(user + sys)")
    print(f"   fresh `python -c`, {fresh_runs} runs: {describe(fresh)}")
    ratio = fresh_median / warm_median
    print(f"   ratio fresh/warm (medians)  : {ratio:.1f}x")
    child_cpu = "-" if warm.mean_child_cpu is None else milliseconds(warm.mean_child_cpu)
    verdicts = ", ".join(sorted({status for _, status in statuses(warm.reference)}))
    targets = (met(f">= {TARGET_RATIO:g}x", ratio >= TARGET_RATIO),
               met(f"< {TARGET_MEDIAN_SECONDS * 1e3:.0f} ms", warm_median < TARGET_MEDIAN_SECONDS))
    return [f"`{os.path.relpath(path, REPOSITORY)}` ({verdicts})", milliseconds(warm_median),
            milliseconds(percentile(warm.walls, 0.95)), child_cpu, milliseconds(fresh_median),
            f"**{ratio:.1f}x**", "; ".join(targets)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", action="append", dest="files",
                        help="model file to edit (repeatable; default gated.py and mlp.py)")
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument("--fresh-runs", type=int, default=7)
    arguments = parser.parse_args()
    files = [os.path.abspath(path) for path in arguments.files or DEFAULT_FILES]

    print(f"check latency: {machine_line()}")
    # One worker: an editor checks one buffer at a time.
    engine = Engine(workers=1)
    pipeline = Pipeline(engine)
    try:
        started = time.perf_counter()
        engine.warm_up()
        rows = [benchmark_file(pipeline, path, arguments.edits, arguments.fresh_runs)
                for path in files]
        print(f"\n(total {time.perf_counter() - started:.1f} s)")
        emit("check_latency", markdown(
            ["file", f"warm median ({arguments.edits} edits)", "warm p95", "child CPU (mean)",
             f"fresh `python -c` median ({arguments.fresh_runs} runs)", "fresh / warm",
             "targets"], rows))
    finally:
        engine.close()
        pipeline.close()


if __name__ == "__main__":
    main()
