"""Coverage and fidelity of `fx-lsp check` on real libraries, with no configuration.

Each library is a pinned source distribution from PyPI, unpacked as a user's checkout would be
(README, docs and tests included) into a cache folder outside this repository. fx-lsp checks
one of its model folders, with the unpacked root as the workspace, exactly as a user who
cloned it and ran `fx-lsp check <folder>` would. The script prints, per library:

- classes, and verdicts by where their constructor arguments came from (`arguments.from`);
- coverage: classes with a tracing verdict (traceable, or failed with a failure raised while
  tracing: FX001-FX007, FX199) / all classes. Constructor errors (FX101), import errors
  (FX100) and time-outs or crashes (FX102) do not count;
- agreement: for every class with a verdict, the same instance rebuilt from the JSON
  `arguments` and traced with plain `torch.fx.symbolic_trace` (benchmarks/plain_fx_check.py,
  in a child process) gives the same status and first failure line;
- the most common reasons classes got no tracing verdict.

    python3 benchmarks/repo_coverage.py [--library NAME] [--workers N] [--corpus-dir DIR]

The libraries' own import-time dependencies are installed by scripts/install-corpus.sh.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_util import engine_version
from plain_fx_check import disagreement, plain_verdicts

TRACING_CODES = {"FX001", "FX002", "FX003", "FX004", "FX005", "FX006", "FX007", "FX199"}


@dataclass(frozen=True)
class Library:
    name: str
    distribution: str
    version: str
    #: Folders checked, relative to the unpacked source root (the workspace).
    folders: tuple[str, ...]


LIBRARIES = [
    Library("kornia", "kornia", "0.9.0",
            ("kornia/feature", "kornia/filters", "kornia/models")),
    Library("torch_geometric", "torch-geometric", "2.8.1",
            ("torch_geometric/nn/models", "torch_geometric/nn/conv")),
    Library("fair-esm", "fair-esm", "2.0.0", ("esm",)),
]
# diffusers was tried and left out: its models import transformers' PreTrainedModel, which
# cannot be imported here (the PyPI torchvision is a CUDA build whose operators fail to
# load with the CPU torch), so plain Python cannot import them either.


def unpacked_root(library: Library, corpus_dir: str) -> str:
    """The library's source distribution, downloaded and unpacked once."""
    os.makedirs(corpus_dir, exist_ok=True)
    for name in os.listdir(corpus_dir):
        if name.lower().replace("_", "-") == f"{library.distribution}-{library.version}":
            return os.path.join(corpus_dir, name)
    with tempfile.TemporaryDirectory() as download:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--no-binary", ":all:", "-d", download,
                        f"{library.distribution}=={library.version}"], check=True)
        (archive,) = os.listdir(download)
        with tarfile.open(os.path.join(download, archive)) as tar:
            tar.extractall(corpus_dir, filter="data")
    return unpacked_root(library, corpus_dir)


def has_tracing_verdict(module: dict[str, Any]) -> bool:
    if module["status"] == "traceable":
        return True
    return module["status"] == "failed" and any(
        failure["code"] in TRACING_CODES for failure in module["failures"])


def no_verdict_reason(module: dict[str, Any]) -> str:
    if module["status"] == "not-traced":
        return "not traced: " + " ".join((module["reason"] or "").split()[:6])
    failure = module["failures"][0]
    words = " ".join(failure["message"].split()[:8])
    return f"{failure['code']}: {words}"


def run_library(library: Library, corpus_dir: str, workers: int) -> dict[str, Any]:
    root = unpacked_root(library, corpus_dir)
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "fx_lsp", "check", "--format", "json", "--no-cache",
         "--workers", str(workers), *library.folders],
        cwd=root, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if completed.returncode not in (0, 1):
        raise RuntimeError(f"fx-lsp check failed on {library.name}:\n{completed.stderr}")
    report = json.loads(completed.stdout)
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
    origins = collections.Counter((module.get("arguments") or {}).get("from", "none")
                                  for module in with_verdict)
    reasons = collections.Counter(no_verdict_reason(module) for module in modules
                                  if not has_tracing_verdict(module))
    return {"library": library.name, "version": library.version,
            "files": report["summary"]["files"], "classes": len(modules),
            "with_verdict": len(with_verdict), "origins": dict(origins),
            "agree": len(with_verdict) - len(disagreements), "disagreements": disagreements,
            "reasons": reasons.most_common(10), "seconds": seconds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", action="append", choices=[lib.name for lib in LIBRARIES])
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--corpus-dir", default=os.path.join(
        os.path.expanduser("~"), ".cache", "fx-lsp-corpus"))
    options = parser.parse_args()
    print(f"fx-lsp {engine_version()}, workers={options.workers}")
    rows = [run_library(library, options.corpus_dir, options.workers)
            for library in LIBRARIES if not options.library or library.name in options.library]
    print(f"\n{'library':<18}{'files':>6}{'classes':>9}{'verdicts':>10}{'coverage':>10}"
          f"{'agree':>12}{'seconds':>9}  by argument source")
    for row in rows:
        coverage = 100 * row["with_verdict"] / max(row["classes"], 1)
        origins = ", ".join(f"{key} {value}" for key, value in sorted(row["origins"].items()))
        print(f"{row['library'] + ' ' + row['version']:<18}{row['files']:>6}{row['classes']:>9}"
              f"{row['with_verdict']:>10}{coverage:>9.1f}%"
              f"{row['agree']:>6}/{row['with_verdict']:<5}{row['seconds']:>9.0f}  {origins}")
    classes = sum(row["classes"] for row in rows)
    verdicts = sum(row["with_verdict"] for row in rows)
    agree = sum(row["agree"] for row in rows)
    print(f"{'total':<18}{'':>6}{classes:>9}{verdicts:>10}"
          f"{100 * verdicts / max(classes, 1):>9.1f}%{agree:>6}/{verdicts:<5}")
    for row in rows:
        print(f"\n{row['library']}: why classes got no tracing verdict")
        for reason, count in row["reasons"]:
            print(f"  {count:>4}  {reason}")
        for name, problem in row["disagreements"]:
            print(f"  DISAGREES {name}: {problem}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
