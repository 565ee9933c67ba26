"""Compile mode against real ``torch.compile`` runs on the CPU, over every wrapper class of
``tests/thirdparty/workspace`` (torchvision, timm, transformers; needs
``scripts/install-thirdparty.sh``).

Runs ``fx-lsp check --no-cache --mode compile --output-format json`` in the workspace, then
``tests/thirdparty/compile_ground_truth.py`` on the inputs fx-lsp decided, and prints one row
per class (real breaks, fx-lsp's breaks, agreement) and the agreement figures: the verdict
(graph breaks or not, or a compile error) with the first break's line and code, and the exact
set of breaks.

    python benchmarks/compile_fidelity.py [--only CLASS ...] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_util import machine_line

THIRDPARTY = Path(__file__).resolve().parent.parent / "tests" / "thirdparty"
sys.path.insert(0, str(THIRDPARTY))

from compile_agreement import Agreement, agreements  # noqa: E402
from compile_ground_truth import WORKSPACE  # noqa: E402

OFFLINE = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")


def run_fx_lsp(out: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--mode", "compile",
         "--output-format", "json", "."],
        cwd=WORKSPACE, env=OFFLINE, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):
        sys.exit(f"fx-lsp check exited {done.returncode}:\n{done.stderr[-3000:]}")
    out.write_text(done.stdout)
    return time.perf_counter() - started


def run_ground_truth(report: Path, out: Path, only: list[str] | None) -> float:
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, str(THIRDPARTY / "compile_ground_truth.py"), "--report", str(report),
         "--out", str(out), *(["--only", *only] if only else [])],
        env=OFFLINE, check=True)
    return time.perf_counter() - started


def _breaks(breaks: list[tuple[str, int, str | None]], error: str) -> str:
    if error:
        return "error: " + error.split("\n")[0][:60]
    if not breaks:
        return "-"
    return "; ".join(f"{Path(p).name}:{line} {code or 'FX501'}" for p, line, code in breaks)


def print_table(rows: list[Agreement]) -> None:
    print("| class | real breaks | fx-lsp breaks | verdict | first | exact |")
    print("|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row.key} | {_breaks(row.real, row.real_error)} "
              f"| {_breaks(row.lsp, row.lsp_error if row.lsp_verdict == 'error' else '')} "
              f"| {'yes' if row.verdict else 'NO'} | {'yes' if row.first else 'NO'} "
              f"| {'yes' if row.exact else 'no'} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", help="class names (default: all)")
    parser.add_argument("--keep", help="folder to keep both JSON files in")
    args = parser.parse_args()
    print(machine_line())
    folder = Path(args.keep or tempfile.mkdtemp(prefix="compile-fidelity-"))
    folder.mkdir(parents=True, exist_ok=True)
    report, truth = folder / "fx-lsp.json", folder / "ground-truth.json"
    lsp_seconds = run_fx_lsp(report)
    real_seconds = run_ground_truth(report, truth, args.only)
    rows = agreements(json.loads(truth.read_text()), json.loads(report.read_text()))
    print_table(rows)
    total = len(rows)
    agree = sum(r.agrees for r in rows)
    verdict = sum(r.verdict for r in rows)
    exact = sum(r.exact for r in rows)
    with_breaks = sum(r.real_verdict == "breaks" for r in rows)
    print(f"\n{total} classes with example inputs ({with_breaks} break in the real run); "
          f"fx-lsp {lsp_seconds:.0f} s, real torch.compile {real_seconds:.0f} s")
    print(f"verdict and first break agree: {agree} of {total} ({100 * agree / total:.1f}%)")
    print(f"verdict alone: {verdict} of {total} ({100 * verdict / total:.1f}%)")
    print(f"exact set of breaks: {exact} of {total} ({100 * exact / total:.1f}%)")


if __name__ == "__main__":
    main()
