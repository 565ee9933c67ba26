"""What the compile mode's loop of calls (``recompile_loop``) adds to a class's compile capture:
the capture with the loop against the capture of one call (the loop off, as on a torch whose
dynamo takes no ``guard_fail_fn``), on the same instance in the same warm process, in CPU
seconds of this process (``time.process_time``, which other work on a shared machine does not
inflate) and wall seconds. Cases: the two blocks of ``compile_capture``, every class of the
compile corpus (tests/corpus/compile, inputs ``float32[2, 8]`` as its test gives them) and of
the recompile corpus (tests/corpus/recompiles, its ``EXAMPLE_INPUTS``).

On a real library (``--library``, julius 0.2.8 by default, unpacked as ``pt2_library_coverage``
unpacks it): ``fx-lsp check --no-cache --workers 1 --mode compile`` on its package with the
loop and with it off (``FX_LSP_NO_RECOMPILE_LOOP=1``), alternated ``--repeat`` times (2: ABBA),
the fastest of each, in CPU seconds of the process tree and wall seconds; and whether the
diagnostics differ beyond the loop's own codes.

    python3 -m benchmarks run speed recompile_loop [-- --library julius --repeat 2]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import inspect
import io
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any
from unittest import mock

from benchmarks.fidelity.pt2_library_coverage import LIBRARIES
from benchmarks.fidelity.repo_coverage import unpacked_root
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
from fxcore.worker.job.capture_target import CaptureTarget
from fxcore.worker.job.inputs_decision import InputsDecision
from fxcore.worker.job.job_context import JobContext
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


#: The loop's own diagnostics (FX505-FX508 recompiles, FX510 a swapped submodule).
LOOP_CODES = {"FX505", "FX506", "FX507", "FX508", "FX510"}


def library_check(folder: str, packages: tuple[str, ...], loop: bool
                  ) -> tuple[float, float, dict[str, Any]]:
    """CPU seconds of the process tree, wall seconds and the JSON report of one compile-mode
    check of ``packages`` (paths under ``folder``) by this tree's fx-lsp."""
    environment = {**os.environ, "PYTHONPATH": REPOSITORY}
    if not loop:
        environment["FX_LSP_NO_RECOMPILE_LOOP"] = "1"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--workers",
                           "1", "--mode", "compile", "--format", "json", *packages],
                          cwd=folder, env=environment, capture_output=True, text=True)
    wall = time.perf_counter() - wall
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return cpu, wall, json.loads(done.stdout)


def diagnostics(report: dict[str, Any], loop_codes: bool) -> set[tuple[Any, ...]]:
    return {(item.get("path"), item.get("line"), item.get("code"))
            for item in report["diagnostics"] if (item.get("code") in LOOP_CODES) == loop_codes}


def library_rows(name: str, repeat: int) -> list[list[str]]:
    """The library's compile check with the loop on and off, alternated, fastest of each."""
    (library,) = [found for found in LIBRARIES if found.name == name]
    root = unpacked_root(library, os.path.join(os.path.expanduser("~"), ".cache",
                                               "fx-lsp-corpus"))
    runs: dict[bool, list[tuple[float, float, dict[str, Any]]]] = {False: [], True: []}
    with tempfile.TemporaryDirectory() as folder:
        # A copy: the cached library is left as it is.
        copy = os.path.join(folder, name)
        shutil.copytree(root, copy)
        for round_number in range(repeat):
            for loop in (False, True) if round_number % 2 == 0 else (True, False):
                runs[loop].append(library_check(copy, library.folders, loop))
    off, on = runs[False], runs[True]
    cpu_off, cpu_on = min(run[0] for run in off), min(run[0] for run in on)
    wall_off, wall_on = min(run[1] for run in off), min(run[1] for run in on)
    classes = sum(1 for module in on[-1][2]["modules"] if module["mode"] == "compile")
    same = diagnostics(on[-1][2], False) == diagnostics(off[-1][2], False)
    added = len(diagnostics(on[-1][2], True))
    return [[f"{name} {library.version} ({classes} classes), loop off", f"{cpu_off:.1f} s",
             "1.00x", f"{wall_off:.1f} s", "-"],
            [f"{name} {library.version}, loop on", f"{cpu_on:.1f} s",
             f"{cpu_on / cpu_off:.2f}x", f"{wall_on:.1f} s",
             f"{added} recompile diagnostic(s); the others "
             f"{'the same' if same else 'differ'}"]]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--library", default="julius",
                        help="a library of pt2_library_coverage's list")
    parser.add_argument("--repeat", type=int, default=2, help="rounds on the library; 2: ABBA")
    parser.add_argument("--library-only", action="store_true",
                        help="only the library's table")
    options = parser.parse_args(argv)
    print(machine_line())
    emit("recompile_loop_library", markdown(
        ["fx-lsp check --mode compile", "CPU", "CPU / loop off", "wall", "diagnostics"],
        library_rows(options.library, options.repeat)))
    if options.library_only:
        return
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
