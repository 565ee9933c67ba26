"""Fidelity per torch series: one row per series, how many classes fx-lsp judges as
real torch does on that series, per capture mode, computed there and then.

For each series it runs the class-by-class agreement tests under that series' interpreter (the
venvs ``scripts/test-torch-matrix.sh`` makes; the series of ``python3`` itself as it is):

- fx: the examples, each failure kind and torch's argument parsing, against plain
  ``torch.fx.symbolic_trace`` on the same instance
  (tests/fxcore/worker/capture/fx/test_plain_fx_agreement.py);
- export: each class of the export corpus against real ``torch.export`` on CPU with real weights
  and inputs, non-strict, strict, with dynamic shapes and with each batch ``Dim.AUTO``
  (tests/fxcore/worker/capture/export/test_export_capture.py,
  tests/fxcore/worker/capture/export/test_export_dynamic.py,
  tests/fxcore/worker/capture/export/test_export_batch_dims.py);
- compile: each class of the compile corpus against real ``torch.compile`` on CPU: the same
  breaks (code and line), or the same error
  (tests/fxcore/worker/capture/compile/test_compile_capture.py).

Real torch's answers are computed in that run on that torch (tests/support/real_torch_answers.py). A
test skipped on a series (a fact of another series) is counted apart, with its reason.

With ``--thirdparty`` it prints instead the same table on real torchvision, timm and
transformers models (tests/thirdparty: fx against plain torch.fx on every wrapper class; export
and compile against real runs on the CPU on the tests' samples;
``benchmarks/fidelity/export_fidelity.py`` and ``compile_fidelity.py`` sweep every class on
one torch). It first installs the libraries into each series' venv
(``scripts/install-thirdparty.sh``, which picks the torchvision built for that torch).
About 5 minutes a series on 2 cores.

    bash scripts/test-torch-matrix.sh            # makes the venvs (and runs the matrix)
    python3 -m benchmarks run fidelity torch_series_table -- [--thirdparty] [SERIES ...]
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

from benchmarks.paths import REPOSITORY
from benchmarks.tables import record

SUPPORTED = ("2.10", "2.11", "2.12", "2.13", "2.14", "2.15")
MATRIX_DIR = Path(os.environ.get("FX_LSP_MATRIX_DIR")
                  or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
                  / "fx-lsp-matrix")
#: The per-class agreement tests of each mode: (module, test function name prefix).
AGREEMENT = {
    "fx": [("tests/fxcore/worker/capture/fx/test_plain_fx_agreement.py",
            "test_examples_agree_with_plain_tracing"),
           ("tests/fxcore/worker/capture/fx/test_plain_fx_agreement.py",
            "test_each_kind_agrees_with_plain_tracing"),
           ("tests/fxcore/worker/capture/fx/test_plain_fx_agreement.py",
            "test_torch_argument_parsing_agrees_with_plain_tracing")],
    "export": [("tests/fxcore/worker/capture/export/test_export_capture.py",
                "test_capture_on_meta_matches_real_export"),
               ("tests/fxcore/worker/capture/export/test_export_capture.py",
                "test_strict_pass_on_meta_matches_real_strict_export"),
               ("tests/fxcore/worker/capture/export/test_export_dynamic.py",
                "test_capture_on_meta_matches_real_export_with_dynamic_shapes"),
               ("tests/fxcore/worker/capture/export/test_export_batch_dims.py",
                "test_batch_specialisations_match_real_export_with_dim_auto")],
    "compile": [("tests/fxcore/worker/capture/compile/test_compile_capture.py",
                 "test_breaks_on_meta_are_those_of_real_tensors")],
}
#: The same on real third-party models (tests/thirdparty, marker ``thirdparty``).
THIRDPARTY_AGREEMENT = {
    "fx": [("tests/thirdparty/test_fidelity.py", "test_fidelity")],
    "export": [("tests/thirdparty/test_export_fidelity.py",
                "test_export_verdict_and_first_line_agree")],
    "compile": [("tests/thirdparty/test_compile_fidelity.py",
                 "test_compile_verdict_and_first_break_agree")],
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


def library_versions(python: str) -> str:
    return subprocess.run([python, "-c", "import importlib.metadata as m; print(', '.join("
                           "f'{d} {m.version(d)}' for d in ('torchvision', 'timm', "
                           "'transformers')))"], capture_output=True, text=True,
                          check=False).stdout.strip() or "not installed"


def uv_environment(**extra: str) -> dict[str, str]:
    """This environment with the matrix's uv cache, linked into venvs rather than copied."""
    return dict(os.environ, UV_CACHE_DIR=str(MATRIX_DIR / "uv-cache"), UV_LINK_MODE="hardlink",
                **extra)


def install_this_checkout(python: str) -> None:
    """fx-lsp from this checkout into a matrix venv (its torch kept), as the matrix does: the
    venv may hold another checkout's."""
    if python == sys.executable:
        return
    subprocess.run([sys.executable, "-m", "uv", "pip", "install", "--quiet", "--python", python,
                    "--constraint", "/dev/stdin", "-e", f"{REPOSITORY}[test]"],
                   input=f"torch=={torch_version(python).split('+')[0]}\n", text=True,
                   env=uv_environment(), check=True)


def install_thirdparty(python: str) -> bool:
    """torchvision (the build for that torch), timm and transformers into ``python``'s venv."""
    done = subprocess.run(["bash", "scripts/install-thirdparty.sh"], cwd=REPOSITORY,
                          env=uv_environment(PYTHON=python),
                          capture_output=True, text=True, check=False)
    if done.returncode:
        print(f"install-thirdparty.sh under {python} failed:\n{done.stderr[-2000:]}",
              file=sys.stderr)
    return done.returncode == 0


def run_agreement_tests(python: str, report: Path, agreement: dict) -> float:
    """The agreement tests under ``python``, results in JUnit XML; the seconds taken."""
    files = sorted({module for tests in agreement.values() for module, _ in tests})
    names = " or ".join(sorted({name for tests in agreement.values() for _, name in tests}))
    started = time.perf_counter()
    # The third-party fixtures run fx-lsp over a whole workspace: longer than the suite's
    # default time-out of a test on a loaded machine (scripts/test.sh gives that tier 1800 s).
    subprocess.run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "",
                    "-n", "2", "--timeout", "1800", "-k", names, f"--junitxml={report}",
                    *files],
                   cwd=REPOSITORY, capture_output=True, text=True, check=False)
    return time.perf_counter() - started


def counts(report: Path, agreement: dict) -> dict[str, Counter[str]]:
    """mode -> Counter of agrees / differs / skipped, from the JUnit XML."""
    found: dict[str, Counter[str]] = {mode: Counter() for mode in agreement}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = re.sub(r"\[.*", "", case.get("name", ""))
        module = case.get("classname", "").replace(".", "/") + ".py"
        mode = next((mode for mode, tests in agreement.items()
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


def table(series_list: list[str], agreement: dict, thirdparty: bool) -> int:
    """Print one row per series as it is measured, then record the table for the README; the
    number of classes judged otherwise than real torch."""
    lines: list[str] = []

    def row(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    row("| series | torch | " + ("libraries | " if thirdparty else "")
        + "fx vs plain torch.fx | export vs real export | compile vs real compile | seconds |")
    row("|---|---|" + ("---|" if thirdparty else "") + "---|---|---|---|")
    differing = 0
    with tempfile.TemporaryDirectory() as scratch:
        for series in series_list:
            python = interpreter(series)
            if python is None:
                row(f"| {series} | no venv (run scripts/test-torch-matrix.sh {series}) |")
                continue
            install_this_checkout(python)
            if thirdparty and not install_thirdparty(python):
                row(f"| {series} | {torch_version(python)} | the libraries did not install |")
                differing += 1
                continue
            libraries = f"{library_versions(python)} | " if thirdparty else ""
            report = Path(scratch) / f"{series}.xml"
            seconds = run_agreement_tests(python, report, agreement)
            if not report.exists():
                row(f"| {series} | {torch_version(python)} | {libraries}the tests did not run |")
                differing += 1
                continue
            found = counts(report, agreement)
            differing += sum(counter["differs"] for counter in found.values())
            row(f"| {series} | {torch_version(python)} | {libraries}{cell(found['fx'])} | "
                f"{cell(found['export'])} | {cell(found['compile'])} | {seconds:.0f} |")
    record("torch_series_thirdparty" if thirdparty else "torch_series", "\n".join(lines))
    return differing


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("series", nargs="*", default=list(SUPPORTED))
    parser.add_argument("--thirdparty", action="store_true",
                        help="the table on real torchvision/timm/transformers models instead")
    arguments = parser.parse_args()
    if arguments.thirdparty:
        print("On real third-party models (tests/thirdparty):\n")
        differing = table(arguments.series, THIRDPARTY_AGREEMENT, thirdparty=True)
    else:
        differing = table(arguments.series, AGREEMENT, thirdparty=False)
    print(f"\nclasses judged otherwise than real torch: {differing}")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
