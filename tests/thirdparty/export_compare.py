"""The third-party export fidelity, both sides and their comparison: fx-lsp's export verdicts
(on meta, through the worker's job) against real ``torch.export`` on the CPU
(``export_ground_truth.py``), for the test (a sample) and the benchmark (every class).

A class agrees when both say it exports, or both say it fails and the first line of the real
failure (its innermost frame in the workspace or a third-party library) is in the call chain of
fx-lsp's first failure (an FX499, or an FX406: the same error raised eagerly on the inputs or
instance fx-lsp chose); a real failure raised by torch itself outside any model line (an
output type export cannot flatten) agrees when fx-lsp's first failure says the same error.
A class fx-lsp found no example inputs for is not tried: neither side can run it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fx_lsp.cli.output_formats.json_report import parse_report

HERE = Path(__file__).resolve().parent
WORKSPACE = HERE / "workspace"
#: On the 2-core machine the whole workspace takes several minutes a side.
RUN_TIMEOUT = float(os.environ.get("FX_LSP_THIRDPARTY_TIMEOUT", "1500"))


def fx_lsp_export_command(classes: list[str]) -> list[str]:
    """The command that prints fx-lsp's export report of the workspace as JSON: for the whole
    workspace the CLI itself, as a user runs it; for some classes ``export_check.py``, the
    same worker job per file restricted to them (the CLI checks whole files, and the sample's
    files hold most of the workspace's classes)."""
    if not classes:
        return [sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--mode", "export",
                "--output-format", "json", str(WORKSPACE)]
    return [sys.executable, str(HERE / "export_check.py"), str(WORKSPACE), "--only", *classes]


def _run(argv: list[str], ok: tuple[int, ...] = (0,)) -> str:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    completed = subprocess.run(argv, cwd=HERE, env=env, capture_output=True, text=True,
                               timeout=RUN_TIMEOUT)
    if completed.returncode not in ok or not completed.stdout.strip():
        # No report at all is no answer either (a script that died with a traceback).
        raise RuntimeError(f"{' '.join(argv)} exited {completed.returncode}, printing "
                           f"{len(completed.stdout)} characters:\n{completed.stderr[-4000:]}")
    return completed.stdout


def run_both(report_path: Path, classes: list[str]) -> tuple[dict, dict]:
    """(fx-lsp's report, the real-export ground truth) of ``classes`` (all when empty),
    one after the other: on two cores, at once slows both."""
    # fx-lsp check exits 1 when a class fails: a report all the same.
    report_path.write_text(_run(fx_lsp_export_command(classes), ok=(0, 1)), encoding="utf-8")
    truth = parse_report(_run([sys.executable, str(HERE / "export_ground_truth.py"),
                             str(report_path)]))
    return parse_report(report_path.read_text(encoding="utf-8")), truth


def _real(path: str) -> str:
    """Absolute: the CLI prints paths under its working folder (this one) relative to it."""
    return os.path.realpath(path if os.path.isabs(path) else os.path.join(HERE, path))


def short(path: str | None) -> str:
    if not path:
        return "-"
    for marker in ("site-packages" + os.sep, str(WORKSPACE) + os.sep):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


@dataclass
class Row:
    """One class: the real export's verdict and first line, fx-lsp's, and whether they agree
    (None: not tried)."""

    key: str
    real: str
    fx_lsp: str
    agree: bool | None
    why: str = ""


def compare(module: dict[str, Any], truth: dict[str, Any]) -> Row:
    key = f"{truth['module'].split('.')[-1]}.py:{truth['class']}"
    failures = module["failures"]
    first = failures[0] if failures else None
    where = f" {short(_real(first['path']))}:{first['line']} {first['code']}" if first else ""
    mine = f"{module['status']}{where}" if module["status"] != "not-traced" else \
        f"not checked: {(module['reason'] or '')[:60]}"
    if truth["verdict"] == "no-inputs":
        return Row(key, "not run (no inputs)", mine, None)
    frame = truth.get("innermost_frame")
    line = f" {short(frame['path'])}:{frame['line']}" if frame else ""
    real = f"{truth['verdict']}{line}" + (f" {truth['exception']}" if "exception" in truth
                                          else "")
    if truth["verdict"] == "build-error":
        return Row(key, real, mine, False, "does not build on the CPU")
    if truth["verdict"] == "ok":
        agree = module["status"] == "traceable"
        return Row(key, real, mine, agree, "" if agree else "real export succeeds")
    # FX406: fx-lsp's inputs or instance do not fit, the error the module raises eagerly too.
    if module["status"] != "failed" and not (first and first["code"] == "FX406"):
        return Row(key, real, mine, False, "real export fails")
    if frame is None:
        # Raised by torch itself (an output type it cannot flatten, after forward returned):
        # no line of the model's to compare, so the error's own words are.
        said = truth["message"][:80]
        agree = said in first["message"]
        return Row(key, f"{real} (in torch, no model line)", mine, agree,
                   "" if agree else f"fx-lsp's first failure does not say {said!r}")
    chain = {(_real(f["path"]), f["line"]) for f in first["frames"]}
    chain.add((_real(first["path"]), first["line"]))
    agree = (frame["path"], frame["line"]) in chain
    return Row(key, real, mine, agree, "" if agree else "the real first line is not in "
               "fx-lsp's first failure's chain")


def rows(report: dict, truth: dict) -> list[Row]:
    by_name = {m["qualified_name"]: m for m in report["modules"]}
    return [compare(by_name[f"{t['module']}:{t['class']}"], t) for t in truth["modules"]]


def table(found: list[Row]) -> str:
    lines = ["| class | real torch.export (CPU) | fx-lsp export (meta) | agree |",
             "|---|---|---|---|"]
    for row in found:
        mark = "not tried" if row.agree is None else "yes" if row.agree else f"NO: {row.why}"
        lines.append(f"| {row.key} | {row.real} | {row.fx_lsp} | {mark} |")
    tried = [row for row in found if row.agree is not None]
    agreeing = sum(bool(row.agree) for row in tried)
    exporting = sum(row.real == "ok" for row in tried)
    in_torch = sum(row.real.endswith("no model line)") for row in tried)
    lines.append(f"\nagreement: {agreeing} of {len(tried)} classes tried "
                 f"({100 * agreeing / max(len(tried), 1):.1f}%): real export ok "
                 f"{exporting}, failing at a model line {len(tried) - exporting - in_torch}, "
                 f"failing inside torch {in_torch}; {len(found) - len(tried)} not tried "
                 f"(no example inputs)")
    return "\n".join(lines)
