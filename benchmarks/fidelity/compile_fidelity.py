"""Compile mode against real ``torch.compile`` runs on the CPU, over every wrapper class of
``tests/thirdparty/workspace`` (torchvision, timm, transformers; needs
``scripts/install-thirdparty.sh``).

Runs ``fx-lsp check --no-cache --mode compile --output-format json`` in the workspace, then
``tests/thirdparty/compile_ground_truth.py`` on the inputs fx-lsp decided, and prints one row
per class (real breaks, fx-lsp's breaks, graph counts, agreement) and the agreement figures:
the verdict (graph breaks or not, or a compile error) with the first break's line and code, the
exact set of breaks and the graph count; then each side's verdicts and the classes not tried
(no example inputs). ``pt2_fidelity_table.py`` joins a kept folder with the export sweep's
into one table per class.

    python3 -m benchmarks run fidelity compile_fidelity --
        [--only CLASS ...] [--keep DIR [--reprint]]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmarks.paths import THIRDPARTY, use_thirdparty_helpers
from benchmarks.provenance import machine_line
from benchmarks.tables import emit, markdown
from fx_lsp.cli.output_formats.json_report import parse_report

use_thirdparty_helpers()

from compile_agreement import Agreement, agreements, class_key  # noqa: E402
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
        [sys.executable, os.path.join(THIRDPARTY, "compile_ground_truth.py"),
         "--report", str(report), "--out", str(out), *(["--only", *only] if only else [])],
        env=OFFLINE, check=True)
    return time.perf_counter() - started


def _breaks(breaks: list[tuple[str, int, str | None]], error: str) -> str:
    if error:
        return "error: " + error.split("\n")[0][:60]
    if not breaks:
        return "-"
    return "; ".join(f"{Path(p).name}:{line} {code or 'FX501'}" for p, line, code in breaks)


def print_table(rows: list[Agreement]) -> None:
    print("| class | real breaks | fx-lsp breaks | graphs real / fx-lsp | verdict | first "
          "| exact |")
    print("|---|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row.key} | {_breaks(row.real, row.real_error)} "
              f"| {_breaks(row.lsp, row.lsp_error if row.lsp_verdict == 'error' else '')} "
              f"| {row.real_graphs} / {row.lsp_graphs} "
              f"| {'yes' if row.verdict else 'NO'} | {'yes' if row.first else 'NO'} "
              f"| {'yes' if row.exact else 'no'} |")


def _counts(verdicts: list[str]) -> str:
    counts = Counter(verdicts)
    return ", ".join(f"{counts[name]} {name}" for name in ("whole", "breaks", "error",
                                                          "build-error", "missing")
                     if counts[name])


def summary(rows: list[Agreement], report: dict) -> list[list[str]]:
    """The agreement figures, each side's verdicts, and the classes not tried and why."""
    total = len(rows)
    modules = [m for m in report["modules"] if m.get("mode", "compile") == "compile"]
    untried = [m for m in modules if not (m.get("inputs") or {}).get("tensors")]
    reasons = Counter(m.get("reason") or m["status"] for m in untried)
    figures = [["classes in the report", f"{len(modules)}; not tried {len(untried)}" + "".join(
        f"; {count} {reason}" for reason, count in reasons.items())]]
    for label, count in (
            ("verdict and first break (or error) agree", sum(r.agrees for r in rows)),
            ("verdict alone", sum(r.verdict for r in rows)),
            ("exact set of breaks", sum(r.exact for r in rows)),
            ("same number of graphs", sum(r.real_graphs == r.lsp_graphs for r in rows))):
        figures.append([label, f"**{count} of {total}** ({100 * count / max(total, 1):.1f}%)"])
    figures += [["real `torch.compile` (CPU)", _counts([r.real_verdict for r in rows])],
                ["fx-lsp compile (meta)", _counts([r.lsp_verdict for r in rows])]]
    errors = [r.key for r in rows if r.real_verdict == r.lsp_verdict == "error"]
    if errors:
        figures.append(["a compile error on both sides", ", ".join(errors)])
    if untried:
        figures.append(["not tried", ", ".join(class_key(m["path"], m["class"])
                                               for m in untried)])
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", help="class names (default: all)")
    parser.add_argument("--keep", help="folder to keep both JSON files in")
    parser.add_argument("--reprint", action="store_true",
                        help="print the figures of the JSON files already in --keep, run nothing")
    args = parser.parse_args()
    if args.reprint and not args.keep:
        parser.error("--reprint needs --keep")
    print(machine_line())
    folder = Path(args.keep or tempfile.mkdtemp(prefix="compile-fidelity-"))
    folder.mkdir(parents=True, exist_ok=True)
    report, truth = folder / "fx-lsp.json", folder / "ground-truth.json"
    times = []
    if not args.reprint:
        lsp_seconds = run_fx_lsp(report)
        real_seconds = run_ground_truth(report, truth, args.only)
        times = [["time", f"fx-lsp {lsp_seconds:.0f} s (on meta), the real runs "
                          f"{real_seconds:.0f} s"]]
    rows = agreements(json.loads(truth.read_text()), parse_report(report.read_text()))
    print_table(rows)
    print(f"\n{len(rows)} classes with example inputs; JSON in {folder}")
    emit("compile_fidelity", markdown(
        ["figure", "value"], summary(rows, parse_report(report.read_text())) + times))


if __name__ == "__main__":
    main()
