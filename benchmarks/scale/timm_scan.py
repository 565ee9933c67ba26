"""A workspace scan of timm's own ``models/`` folder with ``fx-lsp check``.

Copies the installed timm package into a temporary workspace (with a ``pyproject.toml``),
so that ``timm/models/*.py`` import as ``timm.models.X`` from the workspace root, exactly as
they are: their relative imports (``from ._builder import ...``) and absolute ones
(``from timm.layers import ...``) both resolve to the copy, which shadows the installed
timm. ``shutil.copytree`` keeps modification times, so the ``__pycache__`` that came with
the installed package stays valid: fx-lsp's workers never write bytecode, and without it
every job would compile all of timm again.

timm imports torchvision, whose CUDA-built wheel cannot load next to the CPU torch; the
copied ``timm/__init__.py`` gets one first line importing a copy of the test workspace's
shim (``tests/thirdparty/workspace/tpmodels/_shim.py``), the same way the fidelity-test
workspace imports it. No file under ``timm/models`` is changed.

Then, as subprocesses, in one run (so that the ratios share the machine's load):

1. ``fx-lsp check --format json --no-cache --workers 1`` over the scanned files,
2. the same with ``--workers 2``,
3. ``--workers 2`` with the result cache, starting from an empty cache (fills it),
4. the same again, served from the cache.

Each run prints wall time, CPU time of its whole process tree, modules per second (every
``nn.Module`` class found: traced or not-traced), and the peak memory of the CLI process
plus the zygote and its children: the sum of RSS over the process tree, sampled from /proc
every 50 ms (RSS counts pages that forked children share with the zygote once per process;
the sum of PSS, which splits shared pages, is sampled every 250 ms and printed beside it).
It also measures where a job's time goes: the import of the file (all of timm, since
``timm.models.X`` imports ``timm``) in a process that has torch preloaded as the zygote has.

Figures are printed, never asserted. By default the whole folder is scanned (119 files,
about 3 minutes with one worker on an idle 2-core machine, 6-7 minutes for the whole
script); ``--every K`` scans every K-th file of the sorted folder instead (``--every 4``:
30 files), a deterministic subset for a busy machine.

    python3 -m benchmarks run scale timm_scan -- [--every 1] [--repetitions 1] [--keep]
"""

from __future__ import annotations

import argparse
import collections
import importlib.util
import os
import py_compile
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from benchmarks.paths import REPOSITORY, TORCHVISION_SHIM
from benchmarks.procfs import (
    children_cpu_seconds,
    idle_fraction,
    machine_cpu_times,
    process_tree,
    pss_kib,
    status_kib,
)
from benchmarks.provenance import engine_version, machine_line
from benchmarks.tables import emit, markdown, met
from fx_lsp.cli.output_formats.json_report import parse_report

SHIM_MODULE = "fxlsp_torchvision_shim"
SAMPLE_SECONDS = 0.05
TIMEOUT_SECONDS = 120
#: PSS needs /proc/PID/smaps_rollup, which walks every mapping: sampled less often.
PSS_EVERY_N_SAMPLES = 5


# -- the workspace ---------------------------------------------------------------------------


def build_workspace(folder: str) -> str:
    """Copy the installed timm into ``folder`` as a workspace; returns its models folder."""
    spec = importlib.util.find_spec("timm")  # locates without importing (which needs the shim)
    if spec is None or not spec.submodule_search_locations:
        sys.exit("timm is not installed: run bash scripts/install-thirdparty.sh")
    installed = next(iter(spec.submodule_search_locations))
    package = os.path.join(folder, "timm")
    shutil.copytree(installed, package)  # copy2: modification times kept, .pyc stay valid
    shutil.copyfile(TORCHVISION_SHIM, os.path.join(folder, f"{SHIM_MODULE}.py"))
    init_path = os.path.join(package, "__init__.py")
    with open(init_path, encoding="utf-8") as handle:
        init_text = handle.read()
    with open(init_path, "w", encoding="utf-8") as handle:
        handle.write(f"import {SHIM_MODULE}  # noqa: F401  (before torchvision, see the shim)\n"
                     + init_text)
    with open(os.path.join(folder, "pyproject.toml"), "w", encoding="utf-8") as handle:
        # A longer time-out than the default 20 s: the first deadline covers the file's
        # import too, and on a shared 2-core machine two workers importing all of timm at
        # once took over 20 s, which fx-lsp reports as FX102 (and never caches).
        handle.write('[project]\nname = "timm-scan"\nversion = "0"\n\n'
                     f"[tool.fx-lsp]\ntimeout = {TIMEOUT_SECONDS}\n")
    # The two changed or new files need bytecode too, for the same reason as the rest.
    for path in (init_path, os.path.join(folder, f"{SHIM_MODULE}.py")):
        py_compile.compile(path, doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
    return os.path.join(package, "models")


def scanned_files(models_folder: str, every: int) -> list[str]:
    """Every ``every``-th ``.py`` file of the sorted models folder (subfolders included),
    relative to the workspace root: deterministic for a given timm version."""
    found = []
    for folder, subfolders, files in os.walk(models_folder):
        subfolders[:] = sorted(name for name in subfolders if name != "__pycache__")
        found += [os.path.join(folder, name) for name in files if name.endswith(".py")]
    root = os.path.dirname(os.path.dirname(models_folder))
    return [os.path.relpath(path, root) for path in sorted(found)][::every]


# -- memory of a process tree ------------------------------------------------------------------


class TreeMemorySampler(threading.Thread):
    """Samples the summed RSS (and PSS) of a process tree until stopped; keeps the peaks."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.peak_rss = 0
        self.peak_pss = 0
        self.peak_processes = 0
        self.samples = 0
        self._stop_event = threading.Event()

    def run(self) -> None:
        while not self._stop_event.is_set():
            tree = process_tree(self.pid)
            rss_kib = sum(status_kib(pid, ("VmRSS",)).get("VmRSS", 0) for pid in tree)
            self.peak_rss = max(self.peak_rss, rss_kib * 1024)
            if self.samples % PSS_EVERY_N_SAMPLES == 0:
                self.peak_pss = max(self.peak_pss, sum(pss_kib(pid) for pid in tree) * 1024)
            self.peak_processes = max(self.peak_processes, len(tree))
            self.samples += 1
            self._stop_event.wait(SAMPLE_SECONDS)

    def stop(self) -> None:
        self._stop_event.set()
        self.join()


# -- one fx-lsp check run ----------------------------------------------------------------------


@dataclass
class ScanRun:
    label: str
    seconds: float
    cpu_seconds: float
    peak_rss: int
    peak_pss: int
    peak_processes: int
    #: Share of the machine's CPU time that was idle during the run (0..1).
    machine_idle: float
    report: dict[str, Any] = field(default_factory=dict)

    @property
    def modules(self) -> int:
        return len(self.report["modules"])


def run_check(workspace: str, files: list[str], label: str, workers: int,
              use_cache: bool) -> ScanRun:
    # The CLI's entry point through this interpreter: the same code as the `fx-lsp` script,
    # without a pyenv shim's start-up in the figure of the cached run.
    command = [sys.executable, "-m", "fx_lsp", "check", "--format", "json",
               "--workers", str(workers), *([] if use_cache else ["--no-cache"]), *files]
    cpu_before = children_cpu_seconds()
    machine_before = machine_cpu_times()
    with tempfile.TemporaryFile("w+") as output:
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=workspace, stdout=output,
                                   stderr=subprocess.PIPE, text=True)
        sampler = TreeMemorySampler(process.pid)
        sampler.start()
        _, stderr = process.communicate()
        seconds = time.perf_counter() - started
        sampler.stop()
        output.seek(0)
        text = output.read()
    if process.returncode not in (0, 1):  # 1: some module failed, as expected of timm
        raise RuntimeError(f"{command} exited {process.returncode}: {stderr[-2000:]}")
    idle = idle_fraction(machine_before, machine_cpu_times())
    return ScanRun(label, seconds, children_cpu_seconds() - cpu_before, sampler.peak_rss,
                   sampler.peak_pss, sampler.peak_processes, idle, parse_report(text))


def verdicts(run: ScanRun) -> dict[str, int]:
    """A run's summary counts, without how many came from the cache."""
    return {key: value for key, value in run.report["summary"].items() if key != "cached"}


def print_run(run: ScanRun) -> None:
    summary = run.report["summary"]
    print(f"  {run.label:<34} {run.seconds:7.2f} s wall  {run.cpu_seconds:7.2f} s CPU "
          f"({run.cpu_seconds / run.seconds:.2f} cores busy)  "
          f"{run.modules / run.seconds:6.2f} modules/s  "
          f"peak RSS sum {run.peak_rss / 2**20:6.0f} MiB, PSS sum {run.peak_pss / 2**20:6.0f} "
          f"MiB ({run.peak_processes} processes)  cached files {summary['cached']}  "
          f"[machine {100 * run.machine_idle:.0f}% idle, load {os.getloadavg()[0]:.1f}]")


def run_row(run: ScanRun) -> list[str]:
    return [run.label, f"{run.seconds:.2f} s", f"{run.cpu_seconds:.1f} s",
            f"{run.modules / run.seconds:.2f}", f"{100 * run.machine_idle:.0f} %",
            f"{run.peak_rss / 2**20:.0f} / {run.peak_pss / 2**20:.0f} MiB"]


def describe_report(report: dict[str, Any]) -> None:
    summary = report["summary"]
    print(f"  fx-lsp found {len(report['modules'])} nn.Module classes in {summary['files']} "
          f"files: {summary['traceable']} traceable, {summary['failed']} failed, "
          f"{summary['not_traced']} not traced (constructor needs arguments); "
          f"{summary['file_errors']} files could not be imported")
    kinds = collections.Counter(failure["kind"] for module in report["modules"]
                                for failure in module["failures"])
    print("  failures by kind: " + ", ".join(f"{kind} {count}"
                                             for kind, count in kinds.most_common()))
    on = collections.Counter(module["instantiated_on"] for module in report["modules"]
                             if module["status"] != "not-traced")
    print("  built on: " + ", ".join(f"{where} {count}" for where, count in on.most_common()))
    for item in report["files"]:
        for error in item["errors"]:
            print(f"  file error: {item['path']}: {error['code']} {error['message'][:160]}")


def time_breakdown(report: dict[str, Any]) -> None:
    """How much of the jobs' time is tracing, and how much is the rest (fork, import,
    construction): from the JSON, per file."""
    file_seconds = [item["seconds"] for item in report["files"]]
    trace_seconds = sum(module["trace_seconds"] for module in report["modules"])
    print(f"  per file job: median {statistics.median(file_seconds):.2f} s, "
          f"total {sum(file_seconds):.1f} s, of which tracing (trace_seconds) "
          f"{trace_seconds:.1f} s ({100 * trace_seconds / sum(file_seconds):.0f}%)")
    slowest = sorted(report["files"], key=lambda item: -item["seconds"])[:3]
    print("  slowest files: " + ", ".join(f"{item['path']} {item['seconds']:.1f} s"
                                          for item in slowest))


def import_cost(workspace: str, module_name: str) -> None:
    """Time the import a job does before tracing, in a process that has preloaded what the
    zygote preloads (``fxcore.host.preload``): ``-X importtime`` splits it between the
    workspace's own modules (timm, the shim) and modules from outside it (torch submodules
    the zygote did not load, torchvision, sympy, ...), which every job imports again."""
    marker = "--- preloaded ---"
    code = ("import sys, time, fxcore.host.preload\n"
            f"print({marker!r}, file=sys.stderr, flush=True)\n"
            f"sys.path.insert(0, {workspace!r})\n"
            "started = time.perf_counter()\n"
            f"import {module_name}\n"
            "print(time.perf_counter() - started)\n")
    environment = dict(os.environ, PYTHONPATH=REPOSITORY)
    completed = subprocess.run([sys.executable, "-X", "importtime", "-c", code],
                               capture_output=True, text=True, env=environment, cwd=workspace,
                               check=True)
    wall = float(completed.stdout.strip().splitlines()[-1])
    after_preload = completed.stderr.split(marker, 1)[1]
    inside = outside = 0
    outside_by_package: collections.Counter[str] = collections.Counter()
    for match in re.finditer(r"import time:\s+(\d+) \|\s+\d+ \|\s*(\S+)", after_preload):
        microseconds, name = int(match.group(1)), match.group(2)
        if name.split(".")[0] in {"timm", SHIM_MODULE}:
            inside += microseconds
        else:
            outside += microseconds
            outside_by_package[".".join(name.split(".")[:2])] += microseconds
    print(f"  import {module_name} after fxcore.host.preload: {wall:.2f} s wall; self time "
          f"{inside / 1e6:.2f} s in workspace modules (timm), {outside / 1e6:.2f} s in modules "
          "from outside the workspace that the zygote does not preload:")
    print("    " + ", ".join(f"{name} {seconds / 1e6:.2f} s"
                             for name, seconds in outside_by_package.most_common(6)))


# -- main ----------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=int, default=1,
                        help="scan every K-th file of the sorted models folder (1: all)")
    parser.add_argument("--repetitions", type=int, default=1,
                        help="alternating --workers 1 / --workers 2 runs (the fastest counts)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary workspace")
    arguments = parser.parse_args()
    print(f"timm models/ scan: {machine_line()}")
    version_before = engine_version()
    print(f"engine at {version_before}")

    workspace = tempfile.mkdtemp(prefix="fx-lsp-timm-scan-")
    try:
        models_folder = build_workspace(workspace)
        everything = scanned_files(models_folder, 1)
        files = scanned_files(models_folder, arguments.every)
        print(f"workspace {workspace}: timm/models has {len(everything)} .py files; scanning "
              f"{len(files)} (every {arguments.every}. of the sorted list, from "
              f"{files[0]} to {files[-1]})")

        by_workers: dict[int, list[ScanRun]] = {1: [], 2: []}
        for repetition in range(arguments.repetitions):
            # Alternated, so that a change of the machine's load hits both alike.
            for workers in (1, 2):
                label = f"--no-cache --workers {workers} (run {repetition + 1})"
                by_workers[workers].append(run_check(workspace, files, label, workers, False))
                print_run(by_workers[workers][-1])
        shutil.rmtree(os.path.join(workspace, ".fx-lsp-cache"), ignore_errors=True)
        first = run_check(workspace, files, "cache, --workers 2, first (fills it)", 2, True)
        print_run(first)
        second = run_check(workspace, files, "cache, --workers 2, second", 2, True)
        print_run(second)
        one = min(by_workers[1], key=lambda run: run.seconds)
        two = min(by_workers[2], key=lambda run: run.seconds)
        runs = [*by_workers[1], *by_workers[2], first, second]

        describe_report(two.report)
        for run in runs:
            if verdicts(run) != verdicts(two):
                print(f"  NOTE: run '{run.label}' differs: {run.report['summary']}")
                describe_report(run.report)
        timeouts = sum(1 for module in two.report["modules"] for failure in module["failures"]
                       if failure["kind"] in {"timeout", "crash"})
        if timeouts:
            print(f"  {timeouts} classes timed out or crashed (never cached; they are traced "
                  "again on the cached run)")
        time_breakdown(one.report)
        first_module = next(path for path in files if not path.endswith("__init__.py"))
        import_cost(workspace, first_module.removesuffix(".py").replace(os.sep, "."))

        if engine_version() != version_before:
            print(f"WARNING: fxcore/fx_lsp changed during the run: now {engine_version()}")
        print("figures:")
        print(f"  modules per second: {one.modules / one.seconds:.2f} with 1 worker, "
              f"{two.modules / two.seconds:.2f} with 2 workers ({two.modules} modules)")
        if arguments.repetitions > 1:
            print("  (fastest of each worker count; per repetition: "
                  + ", ".join(f"{a.seconds / b.seconds:.2f}x"
                              for a, b in zip(by_workers[1], by_workers[2], strict=True))
                  + ")")
        print(f"  speed-up of 2 workers over 1: {one.seconds / two.seconds:.2f}x "
              f"(target >= 1.7x; CPU busy {one.cpu_seconds / one.seconds:.2f} vs "
              f"{two.cpu_seconds / two.seconds:.2f} cores)")
        print(f"  cached run: {second.seconds:.2f} s, {first.seconds / second.seconds:.1f}x "
              f"faster than the run that filled the cache ({first.seconds:.1f} s; target >= "
              f"20x); {second.report['summary']['cached']} of {len(files)} files from cache")
        peak = max(runs, key=lambda run: run.peak_rss)
        print(f"  peak memory (CLI + zygote + workers): RSS sum {peak.peak_rss / 2**20:.0f} MiB"
              f", PSS sum {max(run.peak_pss for run in runs) / 2**20:.0f} MiB "
              f"(RSS peak in run '{peak.label}')")
        speedup, cached = one.seconds / two.seconds, first.seconds / second.seconds
        summary = two.report["summary"]
        emit("timm_scan", markdown(
            [f"{len(files)} files of timm/models, {two.modules} classes", "wall", "CPU (tree)",
             "modules/s", "machine idle", "peak RSS / PSS sum"],
            [run_row(run) for run in runs] + [
                ["2 workers over 1 (fastest of each)", f"**{speedup:.2f}x**",
                 met(">= 1.7x", speedup >= 1.7), "", "", ""],
                ["cached run over the run that filled it", f"**{cached:.1f}x**",
                 met(">= 20x", cached >= 20), "", "", ""],
                ["verdicts", f"{summary['traceable']} traceable, {summary['failed']} failed, "
                 f"{summary['not_traced']} not traced", "", "", "", ""]]))
    finally:
        if arguments.keep:
            print(f"kept {workspace}")
        else:
            shutil.rmtree(workspace, ignore_errors=True)


if __name__ == "__main__":
    main()
