"""Fidelity per torch series (issue 32): one row per series, how many classes fx-lsp judges as
real torch does on that series, per capture mode, computed there and then.

For each series it runs the class-by-class agreement tests under that series' interpreter (the
venvs ``scripts/test-torch-matrix.sh`` makes; the series of ``python3`` itself as it is):

- fx: the examples, each failure kind and torch's argument parsing, against plain
  ``torch.fx.symbolic_trace`` on the same instance (tests/test_plain_fx_agreement.py);
- export: each class of the export corpus against real ``torch.export`` on CPU with real weights
  and inputs, non-strict, strict and with dynamic shapes (tests/test_export_capture.py,
  tests/test_export_dynamic.py);
- compile: each class of the compile corpus against real ``torch.compile`` on CPU: the same
  breaks (code and line), or the same error (tests/test_compile_capture.py).

Real torch's answers are computed in that run on that torch (tests/real_torch_answers.py). A
test skipped on a series (a fact of another series) is counted apart, with its reason.

    bash scripts/test-torch-matrix.sh            # makes the venvs (and runs the matrix)
    python3 benchmarks/torch_series_table.py [SERIES ...]
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
SUPPORTED = ("2.10", "2.11", "2.12", "2.13", "2.14", "2.15")
MATRIX_DIR = Path(os.environ.get("FX_LSP_MATRIX_DIR")
                  or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                  / "fx-lsp-matrix")
#: The per-class agreement tests of each mode: (module, test function name prefix).
AGREEMENT = {
    "fx": [("tests/test_plain_fx_agreement.py", "test_examples_agree_with_plain_tracing"),
           ("tests/test_plain_fx_agreement.py", "test_each_kind_agrees_with_plain_tracing"),
           ("tests/test_plain_fx_agreement.py",
            "test_torch_argument_parsing_agrees_with_plain_tracing")],
    "export": [("tests/test_export_capture.py", "test_capture_on_meta_matches_real_export"),
               ("tests/test_export_capture.py",
                "test_strict_pass_on_meta_matches_real_strict_export"),
               ("tests/test_export_dynamic.py",
                "test_capture_on_meta_matches_real_export_with_dynamic_shapes")],
    "compile": [("tests/test_compile_capture.py", "test_breaks_on_meta_are_those_of_real_tensors")],
}


def interpreter(series: str) -> str | None:
    """The series' python: the matrix venv's, or this one's if it has that series."""
    if torch_version(sys.executable).startswith(series + "."):
        return sys.executable
    venv = MATRIX_DIR / "venvs" / series / "bin" / "python"
    return str(venv) if venv.exists() else None


def torch_version(python: str) -> str:
    return subprocess.run([python, "-c", "import importlib.metadata as m; "
                           "print(m.version('torch'))"], capture_output=True, text=True,
                          check=True).stdout.strip()


def run_agreement_tests(python: str, report: Path) -> float:
    """The agreement tests under ``python``, results in JUnit XML; the seconds taken."""
    files = sorted({module for tests in AGREEMENT.values() for module, _ in tests})
    names = " or ".join(sorted({name for tests in AGREEMENT.values() for _, name in tests}))
    started = time.perf_counter()
    subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "",
                    "-n", "2", "-k", names, f"--junitxml={report}", *files],
                   cwd=REPOSITORY, capture_output=True, text=True, check=False)
    return time.perf_counter() - started


def counts(report: Path) -> dict[str, Counter[str]]:
    """mode -> Counter of agrees / differs / skipped, from the JUnit XML."""
    found: dict[str, Counter[str]] = {mode: Counter() for mode in AGREEMENT}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = re.sub(r"\[.*", "", case.get("name", ""))
        module = case.get("classname", "").replace(".", "/") + ".py"
        mode = next((mode for mode, tests in AGREEMENT.items()
                     if any(module.endswith(path) and name == test for path, test in tests)),
                    None)
        if mode is None:
            continue
        outcome = "differs" if case.find("failure") is not None or case.find("error") \
            is not None else "skipped" if case.find("skipped") is not None else "agrees"
        found[mode][outcome] += 1
    return found


def cell(counter: Counter[str]) -> str:
    total = counter["agrees"] + counter["differs"]
    text = f"{counter['agrees']}/{total}"
    return text + (f" ({counter['skipped']} skipped)" if counter["skipped"] else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("series", nargs="*", default=list(SUPPORTED))
    arguments = parser.parse_args()
    print("| series | torch | fx vs plain torch.fx | export vs real export | "
          "compile vs real compile | seconds |")
    print("|---|---|---|---|---|---|")
    differing = 0
    with tempfile.TemporaryDirectory() as scratch:
        for series in arguments.series:
            python = interpreter(series)
            if python is None:
                print(f"| {series} | no venv (run scripts/test-torch-matrix.sh {series}) "
                      "| | | | |")
                continue
            report = Path(scratch) / f"{series}.xml"
            seconds = run_agreement_tests(python, report)
            if not report.exists():
                print(f"| {series} | {torch_version(python)} | the tests did not run | | | |")
                differing += 1
                continue
            found = counts(report)
            differing += sum(counter["differs"] for counter in found.values())
            print(f"| {series} | {torch_version(python)} | {cell(found['fx'])} | "
                  f"{cell(found['export'])} | {cell(found['compile'])} | {seconds:.0f} |",
                  flush=True)
    print(f"\nclasses judged otherwise than real torch: {differing}")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
