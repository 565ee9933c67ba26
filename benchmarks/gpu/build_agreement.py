"""fx-lsp's export and compile verdicts judged for a GPU (``device = "cuda"``) on two builds of
torch, the same classes on each: this Python's torch and ``--other PYTHON``'s (a CPU-only build
against PyPI's CUDA build of the same release, neither with a GPU), over the GPU-written,
compile and export corpora (the GPU view must give the same verdicts on both). Each
verdict is the class's status and its problems' (line, code); the table gives how many differ,
and each difference is printed. Needs no GPU.

    python3 -m benchmarks run gpu build_agreement -- --other PATH/TO/python
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.gpu.gpu_answers import report_of, workspace
from benchmarks.provenance import machine_line
from benchmarks.tables import emit, markdown

Verdicts = dict[tuple[str, str], tuple[str, list[tuple[int, str]]]]


def _torch(python: str) -> str:
    return subprocess.run([python, "-c", "import torch; print(torch.__version__)"],
                          capture_output=True, text=True, check=True).stdout.strip()


def verdicts(python: str, corpora: list[str]) -> Verdicts:
    """Each class's verdict in each mode, judged for a GPU with ``python``'s torch."""
    with tempfile.TemporaryDirectory() as folder:
        report = report_of(workspace(Path(folder), corpora, "cuda"), python)
    return {(f"{module['path']}:{module['class']}", module["mode"]): (
        module["status"], sorted((d["line"], d["code"]) for d in report["diagnostics"]
                                 if d["path"] == module["path"] and d["mode"] == module["mode"]
                                 and module["class"] in d["classes"]))
        for module in report["modules"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--other", required=True, help="the Python of the other build")
    parser.add_argument("--corpus", default="gpu,compile,export")
    arguments = parser.parse_args()
    print(machine_line())
    corpora = arguments.corpus.split(",")
    here, other = verdicts(sys.executable, corpora), verdicts(arguments.other, corpora)
    differing = sorted(key for key in here.keys() | other.keys()
                       if here.get(key) != other.get(key))
    builds = (f"torch {_torch(sys.executable)}", f"torch {_torch(arguments.other)}")
    emit("build_agreement", markdown(
        ("builds", "verdicts (class and mode)", "differ"),
        [(" against ".join(builds), len(here.keys() | other.keys()), len(differing))]))
    for key in differing:
        print(f"- {key[0]} ({key[1]}): {builds[0]} {here.get(key)}; {builds[1]} {other.get(key)}")


if __name__ == "__main__":
    main()
