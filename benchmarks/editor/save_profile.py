"""Where the seconds of an edited one-class file's save go, stage by stage: each phase of an
editor's staged trace (``fxcore.reporting.mode_phases``: fx; the single calls; compile's loop
of calls beside them) run as the server's worker runs it (``run_job`` in a child forked from a
process that imported torch and warmed the modes up, as the zygote does), under ``cProfile``,
on a text whose class body changed (no result of an earlier text answers). Printed: each
phase's wall-clock and CPU seconds, and the fx-lsp steps that took the most of them
(cumulative), then torch's functions by their own time.

    python3 -m benchmarks.editor.save_profile FILE [--modes fx,export,compile] [--top 12]

Run by ``mode_latency --profile`` in a process of its own (it imports torch, and runs the
file's code); prints figures, asserts nothing.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import resource
import shutil
import sys
import tempfile
import time

from benchmarks.editor.class_edits import edited

#: fx-lsp's steps that the profile names (``file:function`` as pstats prints them), a phase's
#: seconds shared among them.
STEPS = {
    "fx/tracing.py:capture": "fx: symbolic trace",
    "pipeline/capturing.py:decide_before_capture": "example inputs decided",
    "export/exporting.py:exported": "export: the export on the inputs",
    "export/exporting.py:_batch_hints": "export: the dynamic-batch export (FX407)",
    "compile/compiling.py:_run": "compile: each compiled run (first call + loop)",
    "compile/recompile_loop.py:after_first_call": "compile: the loop of calls",
    "compile/recompile_loop.py:_same_inputs": "loop: the same inputs again",
    "compile/recompile_loop.py:_each_new_one": "loop: new sizes / values / lengths",
    "compile/recompile_loop.py:_loader": "loop: a loader's calls",
    "building/instances.py:build_class": "the class built",
}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _profiled_child(job: object, output: str) -> None:
    """In a forked child, as a worker: the job under cProfile, its figures to ``output``."""
    from fxcore.worker.pipeline.job import run_job

    profile = cProfile.Profile()
    started, cpu = time.perf_counter(), _cpu()
    profile.enable()
    run_job(job, lambda message: None)  # type: ignore[arg-type]
    profile.disable()
    seconds, cpu = time.perf_counter() - started, _cpu() - cpu
    with open(output, "w", encoding="utf-8") as handle:
        handle.write(f"{seconds} {cpu}\n")
    profile.dump_stats(output + ".prof")


def _steps(stats: pstats.Stats) -> list[tuple[str, float]]:
    """The named steps' cumulative seconds, largest first."""
    found: dict[str, float] = {}
    for (filename, _, function), (_, _, _, cumulative, _) in stats.stats.items():  # type: ignore[attr-defined]
        for where, name in STEPS.items():
            folder_file, wanted = where.split(":")
            if filename.endswith(folder_file) and function == wanted:
                found[name] = max(found.get(name, 0.0), cumulative)
    return sorted(found.items(), key=lambda item: -item[1])


def _torch_own(stats: pstats.Stats, top: int) -> list[tuple[str, float]]:
    """torch's (and sympy's) functions by their own time."""
    rows = [(f"{filename.split('site-packages/')[-1]}:{function}", own)
            for (filename, _, function), (_, _, own, _, _) in stats.stats.items()  # type: ignore[attr-defined]
            if "site-packages/torch" in filename or "site-packages/sympy" in filename]
    return sorted(rows, key=lambda item: -item[1])[:top]


def profile(file: str, modes: tuple[str, ...], top: int) -> None:
    import fxcore.host.preload  # noqa: F401  (torch, as the zygote imports it)
    from fxcore.api.session import EngineSession
    from fxcore.host.zygote import _warm
    from fxcore.model.job_spec import EngineConfig
    from fxcore.reporting.mode_phases import phase_names, stage_jobs

    _warm(list(modes))
    with tempfile.TemporaryDirectory() as root:
        target = os.path.join(root, os.path.basename(file))
        shutil.copy(file, target)
        with open(target, encoding="utf-8") as handle:
            original = handle.read()
        stage = 0
        while True:
            with open(target, "w", encoding="utf-8") as handle:
                handle.write(edited(original, stage))  # a class body no phase ran before
            job = EngineSession.document_job(target, lambda _path: root,
                                             lambda _path: EngineConfig(modes=modes), {})
            assert job is not None
            phases = stage_jobs(job, stage)
            if not phases:
                return
            stage += 1
            for phase_job, phase in phases:
                output = os.path.join(root, f"phase-{stage}-{len(phase.modes)}-{phase.held}")
                child = os.fork()
                if child == 0:
                    try:
                        _profiled_child(phase_job.with_absolute_paths(), output)
                    finally:
                        os._exit(0)
                os.waitpid(child, 0)
                with open(output, encoding="utf-8") as handle:
                    seconds, cpu = map(float, handle.read().split())
                stats = pstats.Stats(output + ".prof", stream=io.StringIO())
                name = ", ".join(phase_names(phase)) + (" (held)" if phase.held else "")
                print(f"stage {stage - 1}, {name}: {seconds * 1e3:.0f} ms wall, "
                      f"{cpu * 1e3:.0f} ms CPU (profiled)")
                for step, cumulative in _steps(stats):
                    print(f"    {step:55} {cumulative * 1e3:8.0f} ms")
                print("    torch's functions by their own time:")
                for function, own in _torch_own(stats, top):
                    print(f"      {function[:80]:80} {own * 1e3:7.0f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("file")
    parser.add_argument("--modes", default="fx,export,compile")
    parser.add_argument("--top", type=int, default=8)
    arguments = parser.parse_args()
    sys.stdout.reconfigure(line_buffering=True)
    profile(os.path.abspath(arguments.file), tuple(arguments.modes.split(",")), arguments.top)


if __name__ == "__main__":
    main()
