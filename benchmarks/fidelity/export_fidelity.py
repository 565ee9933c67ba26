"""The export mode on real third-party models: fx-lsp's export verdict and first
line (on meta, through the worker's job) against real ``torch.export`` on the CPU with real
weights and real tensors of the same input specs, for every wrapper class of
``tests/thirdparty/workspace`` (torchvision, timm, transformers).

Prints the table (class, real verdict and first line, fx-lsp's, agree?) and the agreement
over the classes tried. ``tests/thirdparty/test_export_fidelity.py`` asserts the same per
class on a sample; this runs the full sweep.

    python3 -m benchmarks run fidelity export_fidelity -- [--only CLASS...] [--keep DIR]

Target: at least 95% agree. Printed, never asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.paths import use_thirdparty_helpers
from benchmarks.provenance import machine_line
from benchmarks.tables import emit, markdown

use_thirdparty_helpers()

from export_compare import Row, rows, run_both, table  # noqa: E402


def summary(found: list[Row], seconds: float) -> str:
    """The agreement by what real export did, over the classes tried."""
    tried = [row for row in found if row.agree is not None]
    groups = {"real export succeeds": [row for row in tried if row.real == "ok"],
              "real export fails inside torch (no model line)":
                  [row for row in tried if row.real.endswith("no model line)")]}
    groups["real export fails at a model line"] = [
        row for row in tried if not any(row in group for group in groups.values())]
    agreeing = sum(bool(row.agree) for row in tried)
    return markdown(["classes", "tried", "fx-lsp agrees"], [
        *([label, len(group), sum(bool(row.agree) for row in group)]
          for label, group in groups.items()),
        ["**all tried**", len(tried), f"**{agreeing} of {len(tried)} "
         f"({100 * agreeing / max(len(tried), 1):.0f}%)**"],
        ["not tried (no example inputs)", len(found) - len(tried), ""],
        ["both sides' time", "", f"{seconds:.0f} s"]])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=[], help="class names (default: all)")
    parser.add_argument("--keep", type=Path, default=None,
                        help="folder to keep both sides' JSON in")
    options = parser.parse_args()
    print(machine_line())
    folder = options.keep or Path(tempfile.mkdtemp(prefix="export-fidelity-"))
    folder.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    report, truth = run_both(folder / "fx-lsp-export.json", options.only)
    (folder / "real-export.json").write_text(json.dumps(truth, indent=1))
    found = rows(report, truth)
    print(table(found))
    print(f"JSON in {folder}")
    emit("export_fidelity", summary(found, time.perf_counter() - started))
    return 0


if __name__ == "__main__":
    sys.exit(main())
