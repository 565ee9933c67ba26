"""The fx mode on real third-party models: ``fx-lsp check --format json`` against
plain ``torch.fx.symbolic_trace`` on the CPU (``tests/thirdparty/ground_truth.py``), over every
wrapper class of ``tests/thirdparty/workspace`` (torchvision, timm, transformers; needs
``scripts/install-thirdparty.sh``).

Prints one row per class (plain torch.fx's verdict, what disagrees) and, per library, how many
classes have the same verdict, the same node count where plain torch.fx traces them, the same
failure kind where it fails, and plain torch.fx's innermost third-party frame among the frames
of fx-lsp's failure; then each side's wall and CPU time. ``tests/thirdparty/test_fidelity.py``
asserts the same per class on a sample of the workspace's files; this runs the full sweep.

    python3 -m benchmarks run fidelity fx_fidelity -- [--files tpmodels/x.py ...] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from benchmarks.paths import use_thirdparty_helpers
from benchmarks.provenance import machine_line
from benchmarks.tables import emit, markdown

use_thirdparty_helpers()

from fx_compare import Row, Runs, compare, library, pairs, run_both  # noqa: E402


def rows(runs: Runs) -> list[Row]:
    """Every class of the ground truth, compared; one fx-lsp did not report disagrees."""
    found = []
    for key, (want, got) in sorted(pairs(runs.truth, runs.report).items()):
        if want is None:
            found.append(Row(key, "-", False, why=f"{key}: no ground truth"))
        elif got is None:
            found.append(Row(key, want["verdict"], False, why=f"{key}: not in fx-lsp's report"))
        else:
            found.append(compare(key, want, got))
    return found


def _count(found: list[Row], check: str) -> str:
    applies = [getattr(row, check) for row in found if getattr(row, check) is not None]
    return f"{sum(applies)} of {len(applies)}"


def summary(found: list[Row], runs: Runs) -> str:
    """Per library and over all: each check, over the classes it applies to."""
    groups = {name: [row for row in found if library(row.key) == name]
              for name in ("torchvision", "timm", "transformers")}
    groups["**all**"] = found
    table = [[name, len(group), _count(group, "same_verdict"), _count(group, "same_nodes"),
              _count(group, "same_kind"), _count(group, "frame_found"),
              sum(not row.why for row in group)] for name, group in groups.items()]
    for side, (wall, cpu) in runs.seconds.items():
        table.append([f"{side}'s time", "", "", "", "", "", f"{wall:.0f} s wall, {cpu:.0f} s CPU"])
    return markdown(["library", "classes", "same verdict", "same node count (traceable)",
                     "same failure kind (failed)", "third-party frame found", "agree"], table)


def per_class(found: list[Row]) -> str:
    return markdown(["class", "plain torch.fx", "agree"],
                    [[row.key, row.real, "yes" if not row.why else f"NO: {row.why}"]
                     for row in found])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", nargs="*", default=[],
                        help="workspace files, tpmodels/x.py (default: all)")
    parser.add_argument("--keep", type=Path, default=None,
                        help="folder to keep both sides' JSON in")
    options = parser.parse_args()
    print(machine_line())
    folder = options.keep or Path(tempfile.mkdtemp(prefix="fx-fidelity-"))
    folder.mkdir(parents=True, exist_ok=True)
    runs = run_both(folder, tuple(options.files))
    (folder / "fx-lsp.json").write_text(json.dumps(runs.report, indent=1))
    found = rows(runs)
    print(per_class(found))
    print(f"JSON in {folder}")
    emit("fx_fidelity", summary(found, runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
