"""Coverage and fidelity of `fx-lsp check` on real libraries, with no configuration.

Each library is a pinned source distribution from PyPI, unpacked as a user's checkout would be
(README, docs and tests included) into a cache folder outside this repository. fx-lsp checks
one of its model folders, with the unpacked root as the workspace, exactly as a user who
cloned it and ran `fx-lsp check <folder>` would. The script prints, per library:

- classes, and verdicts by where their constructor arguments came from (`arguments.from`);
- coverage: classes with a tracing verdict (traceable, or failed with a failure raised while
  tracing: FX001-FX008, FX199) / all classes. Constructor errors (FX101), import errors
  (FX100) and time-outs or crashes (FX102) do not count. Printed twice: of all classes, and
  of the classes that are not bases (abstract classes and classes whose forward only raises
  NotImplementedError, which fx-lsp skips by design: no instance of them is a model);
- agreement: for every class with a verdict, the same instance rebuilt from the JSON
  `arguments` and traced with plain `torch.fx.symbolic_trace`
  (benchmarks/fidelity/plain_fx_check.py, in a child process) gives the same status and
  first failure line;
- real instances: verdicts whose instance was not built from guessed arguments (its own or
  its parent's): configuration, defaults, builder functions, call sites, configuration
  classes, and instances those built (``fxcore/model/instance_trust.py``);
- the most common reasons classes got no tracing verdict;
- every FX300 and FX199, with the instance it was found on (``--list-codes``).

    python3 -m benchmarks run fidelity repo_coverage --
        [--library NAME] [--workers N] [--corpus-dir DIR] [--checkout NAME=DIR]

``--checkout NAME=DIR`` measures a clone of the library's repository instead of its release
(DIR is the clone's root, at the commit it names): a release's sdist may leave out the tests
and examples that a user who clones the repository has, and whose calls fx-lsp reads.

The libraries' own import-time dependencies are installed by scripts/install-corpus.sh.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from dataclasses import dataclass
from typing import Any

from benchmarks.fidelity.plain_fx_check import disagreement, plain_verdicts
from benchmarks.paths import TORCHVISION_SHIM
from benchmarks.provenance import engine_version
from benchmarks.tables import emit, markdown
from fx_lsp.cli.output_formats.json_report import parse_report
from fxcore.worker.building.class_roles import BASE_PREFIX

SHIM_MODULE = "fxlsp_torchvision_shim"
TRACING_CODES = {"FX001", "FX002", "FX003", "FX004", "FX005", "FX006", "FX007", "FX008",
                 "FX199"}
#: Codes listed one by one for a hand check: an FX300 or FX199 must be a real FX
#: limit or a real library bug, never an artefact of an instance or input fx-lsp made up.
LISTED_CODES = ("FX300", "FX199")


@dataclass(frozen=True)
class Library:
    name: str
    distribution: str
    version: str
    #: Folders checked, relative to the unpacked source root (the workspace).
    folders: tuple[str, ...]
    #: "sdist", or "wheel" for a release published only as a wheel (its code unpacked as is).
    archive: str = "sdist"
    #: The library's top package, when one of its import-time dependencies imports torchvision
    #: (see ``add_torchvision_shim``).
    needs_torchvision_shim: str | None = None


LIBRARIES = [
    Library("kornia", "kornia", "0.9.0",
            ("kornia/feature", "kornia/filters", "kornia/models")),
    Library("torch_geometric", "torch-geometric", "2.8.1",
            ("torch_geometric/nn/models", "torch_geometric/nn/conv")),
    Library("fair-esm", "fair-esm", "2.0.0", ("esm",)),
    # Libraries the product was not tuned on.
    Library("pytorchcv", "pytorchcv", "0.0.74", ("pytorchcv/models",), archive="wheel"),
    Library("vector-quantize", "vector-quantize-pytorch", "1.32.0",
            ("vector_quantize_pytorch",)),
    Library("pytorch-forecasting", "pytorch-forecasting", "1.8.0",
            ("pytorch_forecasting/models", "pytorch_forecasting/layers"),
            needs_torchvision_shim="pytorch_forecasting"),
    # A fourth of another shape: one configurable transformer (attention variants, memory,
    # wrappers) written with einops and einx throughout, rather than a model zoo.
    Library("x-transformers", "x-transformers", "2.31.10", ("x_transformers",)),
]
# diffusers was tried and left out: its models import transformers' PreTrainedModel, which
# cannot be imported here (the PyPI torchvision is a CUDA build whose operators fail to
# load with the CPU torch), so plain Python cannot import them either.


def unpacked_root(library: Library, corpus_dir: str) -> str:
    """The library's source distribution (or wheel), downloaded and unpacked once."""
    os.makedirs(corpus_dir, exist_ok=True)
    folder_name = f"{library.distribution}-{library.version}"
    for name in os.listdir(corpus_dir):
        if name.lower().replace("_", "-") == folder_name:
            return os.path.join(corpus_dir, name)
    binary = ["--only-binary", ":all:"] if library.archive == "wheel" \
        else ["--no-binary", ":all:"]
    with tempfile.TemporaryDirectory() as download:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        *binary, "-d", download,
                        f"{library.distribution}=={library.version}"], check=True)
        (archive,) = os.listdir(download)
        if library.archive == "wheel":
            with zipfile.ZipFile(os.path.join(download, archive)) as wheel:
                wheel.extractall(os.path.join(corpus_dir, folder_name))
        else:
            with tarfile.open(os.path.join(download, archive)) as tar:
                tar.extractall(corpus_dir, filter="data")
    root = unpacked_root(library, corpus_dir)
    if library.needs_torchvision_shim:
        add_torchvision_shim(root, library.needs_torchvision_shim)
    return root


def add_torchvision_shim(root: str, package: str) -> None:
    """Let the library import next to this machine's CPU torch: the PyPI torchvision here is
    a CUDA build that fails at import (tests/thirdparty/workspace/tpmodels/_shim.py says why),
    and some dependencies (torchmetrics, through lightning) import it when it is installed.
    The shim is copied into the workspace and imported by one line put first in the
    package's ``__init__.py``, as benchmarks/scale/timm_scan.py does for timm; nothing else in the
    library is changed. A user with a working torchvision needs none of this."""
    shutil.copyfile(TORCHVISION_SHIM, os.path.join(root, f"{SHIM_MODULE}.py"))
    init_path = os.path.join(root, package, "__init__.py")
    with open(init_path, encoding="utf-8") as handle:
        init_text = handle.read()
    with open(init_path, "w", encoding="utf-8") as handle:
        handle.write(f"import {SHIM_MODULE}  # noqa: F401  (before torchvision, see the shim)\n"
                     + init_text)


def has_tracing_verdict(module: dict[str, Any]) -> bool:
    if module["status"] == "traceable":
        return True
    return module["status"] == "failed" and any(
        failure["code"] in TRACING_CODES for failure in module["failures"])


def is_base(module: dict[str, Any]) -> bool:
    """An abstract class, one whose forward only raises NotImplementedError, or one whose
    forward reads an attribute only subclasses set: skipped by design
    (fxcore/worker/building/class_roles.py, not_a_model_reason and base_reason)."""
    reason = module["reason"] or ""
    return module["status"] == "not-traced" and reason.startswith("Skipped: ") and (
        "abstract class" in reason or "NotImplementedError" in reason
        or reason.startswith(BASE_PREFIX))


def on_real_instance(module: dict[str, Any]) -> bool:
    """The verdict's instance was not built from guessed arguments (fxcore/model/instance_trust.py:
    a parent-built instance is as real as its parent's own)."""
    arguments = module.get("arguments") or {}
    source = arguments.get("parent_from") if arguments.get("from") == "parent" \
        else arguments.get("from")
    return source != "guessed"


def listed_problems(modules: list[dict[str, Any]], root: str) -> list[str]:
    """One line per FX300 or FX199 of a class (as a failure, hint or shape error): class,
    place, status, instance source and the first line of the message."""
    lines = []
    for module in modules:
        arguments = module.get("arguments") or {}
        source = arguments.get("from", "none")
        if source == "parent":
            source = f"parent {arguments.get('parent', '?').rpartition(':')[2]}" \
                     f"({arguments.get('parent_from')}).{arguments.get('path')}"
        seen = set()
        for problem in (module["failures"] + module.get("hints", [])
                        + module.get("shape_errors", [])):
            key = (problem["code"], problem.get("path"), problem.get("line"))
            if problem["code"] not in LISTED_CODES or key in seen:
                continue
            seen.add(key)
            place = os.path.relpath(os.path.join(root, problem["path"]), root) \
                if problem.get("path") else "?"
            message = (problem.get("message") or "").strip().splitlines()[0][:160]
            lines.append(f"{problem['code']} {module['qualified_name']} "
                         f"{place}:{problem.get('line')} [{module['status']}; {source}] {message}")
    return lines


def no_verdict_reason(module: dict[str, Any]) -> str:
    if module["status"] == "not-traced":
        return "not traced: " + " ".join((module["reason"] or "").split()[:6])
    failure = module["failures"][0]
    words = " ".join(failure["message"].split()[:8])
    return f"{failure['code']}: {words}"


def run_library(library: Library, corpus_dir: str, workers: int,
                save_reports: str | None, checkout: str | None = None) -> dict[str, Any]:
    root = os.path.abspath(checkout) if checkout else unpacked_root(library, corpus_dir)
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "fx_lsp", "check", "--format", "json", "--no-cache",
         "--workers", str(workers), *library.folders],
        cwd=root, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if completed.returncode not in (0, 1):
        raise RuntimeError(f"fx-lsp check failed on {library.name}:\n{completed.stderr}")
    report = parse_report(completed.stdout)
    if save_reports:
        os.makedirs(save_reports, exist_ok=True)
        with open(os.path.join(save_reports, f"{library.name}.json"), "w") as handle:
            handle.write(completed.stdout)
    modules = report["modules"]
    with_verdict = [module for module in modules if has_tracing_verdict(module)]
    # One plain-FX process per file, as fx-lsp traces each file in a fresh worker: tracing a
    # whole library in one process lets state from earlier classes leak into later ones
    # (torch_geometric generates code per class on first use).
    by_file: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for module in with_verdict:
        arguments = module.get("arguments") or {}
        by_file[arguments.get("parent") or module["qualified_name"].partition(":")[0]].append(
            module)
    disagreements = []
    for modules_of_file in by_file.values():
        outcomes = plain_verdicts(root, modules_of_file, cwd=root, timeout=600)
        disagreements += [(module["qualified_name"], problem)
                          for module, plain in zip(modules_of_file, outcomes, strict=True)
                          if (problem := disagreement(module, plain, root)) is not None]
    real = sum(on_real_instance(module) for module in with_verdict)
    origins = collections.Counter((module.get("arguments") or {}).get("from", "none")
                                  for module in with_verdict)
    reasons = collections.Counter(no_verdict_reason(module) for module in modules
                                  if not has_tracing_verdict(module))
    version = f"@{os.path.basename(root)}" if checkout else library.version
    return {"library": library.name, "version": version,
            "files": report["summary"]["files"], "classes": len(modules),
            "bases": sum(map(is_base, modules)),
            "with_verdict": len(with_verdict), "real": real, "origins": dict(origins),
            "listed": listed_problems(modules, root),
            "agree": len(with_verdict) - len(disagreements), "disagreements": disagreements,
            "reasons": reasons.most_common(10), "seconds": seconds}


def coverage_row(name: str, files: int, classes: int, bases: int, verdicts: int, real: int,
                 agree: int, seconds: str, origins: str) -> list[object]:
    """A library's row (or the total's): coverage is verdicts over classes, "no bases" over
    the classes that are not bases, "real" the verdicts not built from guessed arguments."""
    return [name, files, classes, bases, verdicts, f"{100 * verdicts / max(classes, 1):.1f}%",
            f"{100 * verdicts / max(classes - bases, 1):.1f}%",
            f"{100 * real / max(verdicts, 1):.1f}%", f"{agree}/{verdicts}", seconds, origins]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", action="append", choices=[lib.name for lib in LIBRARIES])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--corpus-dir", default=os.path.join(
        os.path.expanduser("~"), ".cache", "fx-lsp-corpus"))
    parser.add_argument("--list-codes", action="store_true",
                        help=f"list every {' and '.join(LISTED_CODES)} for a hand check")
    parser.add_argument("--save-reports", metavar="DIR",
                        help="keep each library's JSON report there")
    parser.add_argument("--checkout", action="append", default=[], metavar="NAME=DIR",
                        help="measure the library's repository cloned at DIR, not its release")
    options = parser.parse_args()
    checkouts = dict(item.split("=", 1) for item in options.checkout)
    print(f"fx-lsp {engine_version()}, workers={options.workers}")
    rows = [run_library(library, options.corpus_dir, options.workers, options.save_reports,
                        checkouts.get(library.name))
            for library in LIBRARIES if not options.library or library.name in options.library]
    table = [coverage_row(f"{row['library']} {row['version']}", row["files"], row["classes"],
                          row["bases"], row["with_verdict"], row["real"], row["agree"],
                          f"{row['seconds']:.0f}", ", ".join(
                              f"{key} {value}" for key, value in sorted(row["origins"].items())))
             for row in rows]
    if len(rows) > 1:
        table.append(coverage_row("**total**", *(sum(row[key] for row in rows) for key in (
            "files", "classes", "bases", "with_verdict", "real", "agree")), "", ""))
    emit("repo_coverage", markdown(
        ["library", "files", "classes", "bases", "verdicts", "coverage", "no bases", "real",
         "agree with plain fx", "seconds", "by argument source"], table))
    for row in rows:
        print(f"\n{row['library']}: why classes got no tracing verdict")
        for reason, count in row["reasons"]:
            print(f"  {count:>4}  {reason}")
        for name, problem in row["disagreements"]:
            print(f"  DISAGREES {name}: {problem}")
        if options.list_codes:
            print(f"{row['library']}: every {' and '.join(LISTED_CODES)}")
            for line in row["listed"]:
                print(f"  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
