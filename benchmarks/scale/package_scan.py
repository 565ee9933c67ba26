"""Wall time of `fx-lsp check --no-cache` over a large package: cold and warm bytecode, with
and without the two speed-ups for large packages, with 1 and 2 workers.

- "before": workers write no bytecode and the zygote preloads nothing
  (`FX_LSP_NO_BYTECODE=1 FX_LSP_NO_PRELOAD=1`), as fx-lsp did before;
- "after, cold": bytecode cached in an empty cache folder (the first scan compiles);
- "after, warm": the same scan again, with the compiled bytecode there.

    python3 -m benchmarks run scale package_scan -- WORKSPACE FOLDER [FOLDER ...] [--workers 1 2]

WORKSPACE is the package's checkout (for example an unpacked source distribution from
benchmarks/fidelity/repo_coverage.py's corpus); FOLDERs are checked relative to it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

from benchmarks.procfs import idle_fraction, machine_cpu_times
from benchmarks.provenance import engine_version
from benchmarks.tables import emit, markdown


def scan(workspace: str, folders: list[str], workers: int, environment: dict[str, str]) -> float:
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--format", "json",
         "--workers", str(workers), *folders],
        cwd=workspace, env=environment, capture_output=True, text=True, check=False)
    if completed.returncode not in (0, 1):
        raise RuntimeError(completed.stderr)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("workspace")
    parser.add_argument("folders", nargs="+")
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    options = parser.parse_args()
    print(f"fx-lsp {engine_version()}: {options.workspace} {' '.join(options.folders)}")
    rows = []
    for workers in options.workers:
        with tempfile.TemporaryDirectory() as cache_home:
            base = {**os.environ, "XDG_CACHE_HOME": cache_home}
            before_cpu = machine_cpu_times()
            before = scan(options.workspace, options.folders, workers,
                          {**base, "FX_LSP_NO_BYTECODE": "1", "FX_LSP_NO_PRELOAD": "1"})
            cold = scan(options.workspace, options.folders, workers, base)
            warm = scan(options.workspace, options.folders, workers, base)
            idle = idle_fraction(before_cpu, machine_cpu_times())
        print(f"workers={workers}: before {before:.1f} s, after cold {cold:.1f} s "
              f"({before / cold:.2f}x), after warm {warm:.1f} s ({before / warm:.2f}x); "
              f"machine idle {100 * idle:.0f}% during the runs")
        rows.append([workers, f"{before:.1f} s", f"{cold:.1f} s ({before / cold:.2f}x)",
                     f"{warm:.1f} s ({before / warm:.2f}x)", f"{100 * idle:.0f} %"])
    emit("package_scan", markdown(
        [f"`{' '.join(options.folders)}`: workers", "before", "after, cold", "after, warm",
         "machine idle"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
