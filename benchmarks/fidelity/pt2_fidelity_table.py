"""One row per third-party wrapper class: fx-lsp's export and compile verdicts on
meta and whether each agrees with the real run on the CPU, as a markdown table, from the JSON
that ``export_fidelity.py --keep DIR`` and ``compile_fidelity.py --keep DIR`` kept. Runs
nothing itself.

    python3 -m benchmarks run fidelity export_fidelity -- --keep /tmp/export
    python3 -m benchmarks run fidelity compile_fidelity -- --keep /tmp/compile
    python3 -m benchmarks run fidelity pt2_fidelity_table --
        --export /tmp/export --compile /tmp/compile

Export: ``exports``, or fx-lsp's first failure (code, innermost frame outside torch: the
model's line). Compile: ``whole``, the breaks (count, first break's code and innermost frame),
or the compile error (FX502 and its innermost frame outside torch); graphs counted.
"agrees" is each sweep's criterion (verdict and first line); a compile row whose set of breaks
or graph count differs from the real run says so.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from benchmarks.paths import use_thirdparty_helpers
from benchmarks.tables import emit
from fx_lsp.cli.output_formats.json_report import parse_report

use_thirdparty_helpers()

from compile_agreement import Agreement, agreements, class_key, lsp_side  # noqa: E402
from export_compare import Row, rows  # noqa: E402


def _where(path: str, line: int) -> str:
    return f"`{Path(path).name}:{line}`"


def _model_frame(failure: dict) -> str:
    """The innermost frame of a JSON failure outside torch itself (the model's line that
    failed), else its own place."""
    for frame in reversed(failure.get("frames") or []):
        if f"{os.sep}torch{os.sep}" not in frame["path"]:
            return _where(frame["path"], frame["line"])
    return _where(failure["path"], failure["line"])


def _export_cell(module: dict, row: Row | None) -> tuple[str, str]:
    if row is None or row.agree is None:
        return "not tried (no inputs)", "-"
    if module["status"] == "traceable":
        verdict = "exports"
    else:
        first = module["failures"][0]
        verdict = f"{first['code']} {_model_frame(first)}"
    return verdict, "yes" if row.agree else f"NO ({row.real})"


def _compile_cell(module: dict, row: Agreement | None) -> tuple[str, str]:
    if row is None:
        return "not tried (no inputs)", "-"
    verdict, breaks, _, _ = lsp_side(module)
    graphs = f"{module.get('graph_count')} graph" + ("s" if module.get("graph_count") != 1
                                                      else "")
    if verdict == "error":
        # FX502 where torch.compile itself failed; another code (an operator meta cannot run,
        # a time-out) where fx-lsp could not compile the class at all.
        failures = module["failures"]
        failure = next((f for f in failures if f["code"] == "FX502"), failures[0] if failures
                       else None)
        cell = f"{failure['code']} {_model_frame(failure)}" if failure else "error"
    elif verdict == "breaks":
        path, line, code = breaks[0]
        cell = (f"{len(breaks)} break{'s' if len(breaks) > 1 else ''}, {graphs}; first "
                f"{code or 'FX501'} {_where(path, line)}")
    else:
        cell = f"whole, {graphs}"
    if not row.agrees:
        return cell, f"NO (real: {row.real_verdict})"
    notes = [note for note, differs in (
        ("set of breaks differs", not row.exact),
        (f"real: {row.real_graphs} graphs", row.real_graphs != row.lsp_graphs)) if differs]
    return cell, "yes" + (f" ({'; '.join(notes)})" if notes else "")


def table(export_dir: Path, compile_dir: Path) -> str:
    export_report = parse_report((export_dir / "fx-lsp-export.json").read_text())
    export_rows = {row.key: row for row in rows(
        export_report, json.loads((export_dir / "real-export.json").read_text()))}
    compile_report = parse_report((compile_dir / "fx-lsp.json").read_text())
    compile_rows = {row.key: row for row in agreements(
        json.loads((compile_dir / "ground-truth.json").read_text()), compile_report)}
    compile_modules = {class_key(m["path"], m["class"]): m for m in compile_report["modules"]
                       if m.get("mode", "compile") == "compile"}
    lines = ["| class | export (fx-lsp, meta) | agrees | compile (fx-lsp, meta) | agrees |",
             "|---|---|---|---|---|"]
    for module in export_report["modules"]:
        key = class_key(module["path"], module["class"])
        export_verdict, export_agrees = _export_cell(module, export_rows.get(key))
        compile_verdict, compile_agrees = _compile_cell(compile_modules[key],
                                                        compile_rows.get(key))
        lines.append(f"| {key} | {export_verdict} | {export_agrees} | {compile_verdict} "
                     f"| {compile_agrees} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--export", type=Path, required=True,
                        help="the folder export_fidelity.py --keep wrote")
    parser.add_argument("--compile", type=Path, required=True,
                        help="the folder compile_fidelity.py --keep wrote")
    options = parser.parse_args()
    emit("pt2_fidelity_table", table(options.export, options.compile))
    return 0


if __name__ == "__main__":
    sys.exit(main())
