"""`fx-lsp check examples/ --output-format json` against a recorded report.

Refactors of the engine must not change what users get: the report of the bundled examples
is kept in ``tests/golden/examples-check.json`` and compared field by field (timings and the
machine's own paths aside). Fields added later are allowed; a changed or missing value is a
failure. After an intended change of the report, record it again with
``FX_LSP_RECORD_GOLDEN=1 pytest tests/fx_lsp/cli/test_examples_report.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
import sysconfig
from pathlib import Path
from typing import Any

from cli_support import fx_lsp
from engine_support import EXAMPLES

GOLDEN = Path(__file__).parents[2] / "golden" / "examples-check.json"
#: Fields that measure time, which no two runs share.
TIMINGS = {"seconds", "trace_seconds", "loop_seconds", "shape_seconds"}


def normalized(value: Any) -> Any:
    """The report without timings, with installed packages' paths machine-independent."""
    site = sysconfig.get_paths()["purelib"]
    if isinstance(value, dict):
        return {key: normalized(item) for key, item in value.items() if key not in TIMINGS}
    if isinstance(value, list):
        return [normalized(item) for item in value]
    if isinstance(value, str):
        return value.replace(site, "<site-packages>")
    return value


def missing_or_changed(expected: Any, actual: Any, where: str = "") -> list[str]:
    """Where ``actual`` lacks or changes a value of ``expected`` (new keys are fine)."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        return [problem for key, item in expected.items()
                for problem in (missing_or_changed(item, actual[key], f"{where}.{key}")
                                if key in actual else [f"{where}.{key}: missing"])]
    if isinstance(expected, list) and isinstance(actual, list) and len(expected) == len(actual):
        return [problem for index, (item, other) in enumerate(zip(expected, actual, strict=True))
                for problem in missing_or_changed(item, other, f"{where}[{index}]")]
    return [] if expected == actual else [f"{where}: {expected!r} -> {actual!r}"]


def test_the_examples_report_is_what_it_was() -> None:
    run = fx_lsp("check", ".", "--no-cache", "--output-format", "json", cwd=EXAMPLES,
                 env={**os.environ, "NO_COLOR": "1"})
    assert run.returncode == 1, run.stderr  # the examples have failures on purpose
    report = normalized(json.loads(run.stdout))
    if os.environ.get("FX_LSP_RECORD_GOLDEN") == "1":
        GOLDEN.write_text(json.dumps(report, indent=1, sort_keys=True) + "\n",
                          encoding="utf-8")
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert missing_or_changed(expected, report) == []
