"""Export and compile verdicts on model libraries fx-lsp was not tuned on (issue 33), against
real torch on the CPU in the same run.

Each library is a pinned release from PyPI unpacked as a user's checkout
(``repo_coverage.unpacked_root``); fx-lsp checks a stated part of it with no configuration,
``fx-lsp check --no-cache --mode export,compile --output-format json``, in the unpacked root.
Then, per file in a fresh child process (``pt2_real_check.py``), every class that got example
inputs is rebuilt from the JSON's ``arguments`` on the CPU with real weights and run on real
tensors of the JSON's ``inputs``: eagerly, under real ``torch.export`` (non-strict) and under
real ``torch.compile`` (recording backend, breaks from torch's own log). Printed per library:

- classes with a forward of their own (bases, whose forward only raises
  NotImplementedError, and abstract classes apart), and of those the classes without an
  export verdict and without a compile verdict (a verdict: exports or fails under export;
  compiles whole, with breaks or with an error), with the reasons; target at most 5%;
- own-choice FX499/FX502: an export failure or compile error that the module raises eagerly
  too on the same instance and inputs (the same innermost line), which must be the "does not
  fit" hint (FX406/FX504) instead; target none;
- agreement: export as ``tests/thirdparty/export_compare.compare`` judges it (same verdict,
  the real first failing line in fx-lsp's first failure's chain), compile as
  ``tests/thirdparty/compile_agreement.compare`` (same verdict, same first break or error;
  "exact": the same set of breaks with their GB codes).

    python3 -m benchmarks run fidelity pt2_library_coverage --
        [--library NAME] [--workers 1] [--timeout 60] [--keep DIR] [--reuse DIR]
"""

from __future__ import annotations

import argparse
import collections
import copy
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from benchmarks.fidelity.pt2_real_check import real_outcomes
from benchmarks.fidelity.repo_coverage import Library, is_base, unpacked_root
from benchmarks.paths import child_environment, use_thirdparty_helpers
from benchmarks.provenance import engine_version
from benchmarks.tables import emit, markdown
from fx_lsp.cli.output_formats.json_report import parse_report

use_thirdparty_helpers()

from compile_agreement import compare as compare_compile  # noqa: E402
from export_compare import compare as compare_export  # noqa: E402

#: vit-pytorch's architectures of their own design (the README's list): its many
#: ``simple_vit_with_*`` variants and self-supervised wrappers (dino, mae, ...) are left out.
VIT_FILES = ("vit", "simple_vit", "vit_1d", "vit_3d", "cait", "cct", "cross_vit", "crossformer",
             "cvt", "deepvit", "levit", "local_vit", "max_vit", "mobile_vit", "nest", "pit",
             "regionvit", "rvt", "scalable_vit", "sep_vit", "t2t", "twins_svt", "vivit", "xcit",
             "na_vit")
LIBRARIES = [
    # Its package imports dino.py, which imports torchvision: the CPU torch here needs the
    # shim (repo_coverage.add_torchvision_shim).
    Library("vit-pytorch", "vit-pytorch", "1.26.11",
            tuple(f"vit_pytorch/{name}.py" for name in VIT_FILES),
            needs_torchvision_shim="vit_pytorch"),
    Library("efficientnet-pytorch", "efficientnet-pytorch", "0.7.1", ("efficientnet_pytorch",)),
]
MODES = ("export", "compile")
#: The error code of each mode that an own choice must never be reported as.
ERROR_CODES = {"export": "FX499", "compile": "FX502"}


def has_verdict(module: dict[str, Any]) -> bool:
    """Exports or fails under export; compiles whole, with breaks or with an error. Not a
    verdict: not checked (no inputs, no instance, does not fit, needs real data) or a failure
    before the capture (FX100 import, FX101 constructor, FX102 time-out)."""
    if module["status"] == "traceable":
        return True
    return module["status"] == "failed" and not module["failures"][0]["code"].startswith("FX1")


def no_verdict_reason(module: dict[str, Any]) -> str:
    if module["status"] == "failed":
        failure = module["failures"][0]
        return f"{failure['code']}: {' '.join(failure.get('message', '').split()[:8])}"
    if module["failures"]:
        return f"{module['failures'][0]['code']} (does not fit)"
    return " ".join((module["reason"] or "").split()[:7])


def absolute_paths(module: dict[str, Any], root: str) -> dict[str, Any]:
    """The JSON module with every path absolute and real (the CLI prints those under its
    working folder relative to it), as both comparisons read them."""
    module = copy.deepcopy(module)
    for item in [module, *module["failures"],
                 *(frame for failure in module["failures"] for frame in failure["frames"])]:
        if item.get("path") and not item["path"].startswith("<"):
            item["path"] = os.path.realpath(os.path.join(root, item["path"]))
    return module


@dataclass
class Figures:
    """One library's figures."""

    name: str
    classes: int = 0
    bases: int = 0
    seconds: float = 0.0
    without: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MODES, 0))
    reasons: collections.Counter[str] = field(default_factory=collections.Counter)
    own_choices: list[str] = field(default_factory=list)
    tried: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MODES, 0))
    agree: dict[str, int] = field(default_factory=lambda: dict.fromkeys(MODES, 0))
    exact_breaks: int = 0
    disagreements: list[str] = field(default_factory=list)


def fx_lsp_report(library: Library, root: str, workers: int, timeout: float,
                  keep: str | None, reuse: str | None) -> dict:
    if reuse:
        with open(os.path.join(reuse, f"{library.name}.json")) as handle:
            return parse_report(handle.read())
    # This tree's fx-lsp, not an installed one's: the working folder is the library's.
    environment = child_environment()
    completed = subprocess.run(
        [sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--workers", str(workers),
         "--timeout", str(timeout),
         "--mode", ",".join(MODES), "--output-format", "json", *library.folders],
        cwd=root, env=environment, capture_output=True, text=True, check=False)
    if completed.returncode not in (0, 1) or not completed.stdout.strip():
        raise RuntimeError(f"fx-lsp check failed on {library.name}:\n{completed.stderr}")
    if keep:
        os.makedirs(keep, exist_ok=True)
        with open(os.path.join(keep, f"{library.name}.json"), "w") as handle:
            handle.write(completed.stdout)
    return parse_report(completed.stdout)


def own_choice(module: dict[str, Any], mode: str, eager: dict[str, Any] | None) -> bool:
    """An FX499/FX502 whose error the module raises eagerly too, at a line of its chain."""
    failure = next((f for f in module["failures"] if f["code"] == ERROR_CODES[mode]), None)
    frame = (eager or {}).get("innermost_frame")
    if failure is None or frame is None:
        return False
    chain = {(f["path"], f["line"]) for f in [failure, *failure["frames"]]}
    return (frame["path"], frame["line"]) in chain


def judge(figures: Figures, name: str, by_mode: dict[str, dict], real: dict[str, Any]) -> None:
    """Add one class's real outcomes to ``figures``."""
    if "build" in real:
        for mode in MODES:
            figures.tried[mode] += 1
        figures.disagreements.append(f"{name}: does not build on the CPU: "
                                     f"{real['build']['exception']}")
        return
    for mode in MODES:
        if own_choice(by_mode[mode], mode, real["eager"]):
            figures.own_choices.append(f"{ERROR_CODES[mode]} {name}: "
                                       f"{real['eager']['exception']} "
                                       f"{real['eager']['message'][:100]}")
    module_name, _, class_name = name.partition(":")
    export = compare_export(by_mode["export"], {"module": module_name, "class": class_name,
                                                **real["export"]})
    figures.tried["export"] += 1
    figures.agree["export"] += bool(export.agree)
    if not export.agree:
        figures.disagreements.append(f"export {name}: real {export.real}; fx-lsp "
                                     f"{export.fx_lsp}: {export.why}")
    # A row per nn.Module mode fx-lsp compiled the class in: it agrees when every mode does.
    rows = [compare_compile({"path": by_mode["compile"]["path"], "class": class_name, **row},
                            by_mode["compile"]) for row in real["compile"]]
    figures.tried["compile"] += 1
    figures.agree["compile"] += all(compiled.agrees for compiled in rows)
    figures.exact_breaks += all(compiled.exact for compiled in rows)
    for compiled in rows:
        if not compiled.agrees or not compiled.exact:
            figures.disagreements.append(
                f"compile {name} ({compiled.module_mode}): real {compiled.real_verdict} "
                f"{compiled.real[:3]} {compiled.real_error[:80]}; fx-lsp "
                f"{compiled.lsp_verdict} {compiled.lsp[:3]} {compiled.lsp_error[:80]}")


def run_library(library: Library, corpus_dir: str, workers: int, timeout: float,
                keep: str | None, reuse: str | None = None) -> Figures:
    root = unpacked_root(library, corpus_dir)
    figures = Figures(library.name)
    started = time.perf_counter()
    report = fx_lsp_report(library, root, workers, timeout, keep, reuse)
    figures.seconds = time.perf_counter() - started
    classes: dict[str, dict[str, dict]] = collections.defaultdict(dict)
    for module in report["modules"]:
        classes[module["qualified_name"]][module["mode"]] = absolute_paths(module, root)
    by_file: dict[str, list[tuple[str, dict[str, dict]]]] = collections.defaultdict(list)
    for name, by_mode in classes.items():
        if is_base(by_mode["export"]):
            figures.bases += 1
            continue
        figures.classes += 1
        for mode in MODES:
            if not has_verdict(by_mode[mode]):
                figures.without[mode] += 1
                figures.reasons[f"{mode}: {no_verdict_reason(by_mode[mode])}"] += 1
        inputs = (by_mode["export"].get("inputs") or {}).get("tensors")
        if inputs:
            by_file[by_mode["export"]["path"]].append((name, by_mode))
    for members in by_file.values():
        requests = [{"module": by_mode["export"], "compile": by_mode["compile"],
                     "inputs": by_mode["export"]["inputs"]["tensors"]}
                    for _, by_mode in members]
        for (name, by_mode), real in zip(members, real_outcomes(root, requests), strict=True):
            judge(figures, name, by_mode, real)
    return figures


def share(count: int, total: int) -> str:
    return f"{count} ({100 * count / max(total, 1):.1f}%)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", action="append", choices=[lib.name for lib in LIBRARIES])
    parser.add_argument("--workers", type=int, default=1)
    # EfficientNet-B0 compiles on meta in 20 s on the 2 shared cores (load 8), at the
    # default's limit: a time-out measures the machine, not the class.
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="fx-lsp's seconds per class (default 60)")
    parser.add_argument("--corpus-dir", default=os.path.join(
        os.path.expanduser("~"), ".cache", "fx-lsp-corpus"))
    parser.add_argument("--keep", metavar="DIR", help="keep each library's JSON report there")
    parser.add_argument("--reuse", metavar="DIR",
                        help="read fx-lsp's reports that --keep kept there instead of running "
                             "fx-lsp (the real-torch side runs again)")
    options = parser.parse_args()
    print(f"fx-lsp {engine_version()}, workers={options.workers}")
    rows = [run_library(library, options.corpus_dir, options.workers, options.timeout,
                        options.keep, options.reuse)
            for library in LIBRARIES if not options.library or library.name in options.library]
    emit("pt2_library_coverage", markdown(
        ["library", "classes with a forward", "no export verdict", "no compile verdict",
         "own-choice FX499/FX502", "export agrees", "compile agrees (exact breaks)",
         "fx-lsp seconds"],
        [[row.name, f"{row.classes} (+{row.bases} bases)",
          share(row.without["export"], row.classes), share(row.without["compile"], row.classes),
          len(row.own_choices), f"{row.agree['export']}/{row.tried['export']}",
          f"{row.agree['compile']}/{row.tried['compile']} ({row.exact_breaks})",
          f"{row.seconds:.0f}"] for row in rows]))
    for row in rows:
        print(f"\n{row.name}: why classes got no verdict")
        for reason, count in row.reasons.most_common():
            print(f"  {count:>4}  {reason}")
        for line in row.own_choices:
            print(f"  OWN CHOICE {line}")
        for line in row.disagreements:
            print(f"  DISAGREES {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
