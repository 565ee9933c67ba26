"""The export mode on real third-party models (issue 20): fx-lsp's export verdict and first
line (on meta, through the worker's job) against real ``torch.export`` on the CPU with real
weights and real tensors of the same input specs, for every wrapper class of
``tests/thirdparty/workspace`` (torchvision, timm, transformers).

Prints the table (class, real verdict and first line, fx-lsp's, agree?) and the agreement
over the classes tried. ``tests/thirdparty/test_export_fidelity.py`` asserts the same per
class on a sample; this runs the full sweep.

    python3 -m benchmarks run fidelity export_fidelity -- [--only CLASS...] [--keep DIR]

Target (issue 20): at least 95% agree. Printed, never asserted.
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

use_thirdparty_helpers()

from export_compare import rows, run_both, table  # noqa: E402


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
    print(table(rows(report, truth)))
    print(f"both sides in {time.perf_counter() - started:.0f} s; JSON in {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
