"""fx-lsp's compile verdicts against real torch on an NVIDIA GPU: real cold ``torch.compile``
with inductor on CUDA tensors, over the GPU-written corpus (tests/corpus/gpu) and the compile
corpus (tests/corpus/compile), and the seconds a user waits for each answer.

For each class: real torch's breaks (line, GB code) and graph count from
``scripts/compile_ground_truth.py --device cuda --backend inductor`` (its first, cold call:
dynamo and inductor, which is what running the model compiled costs before it says anything),
fx-lsp's breaks and its seconds from ``fx-lsp check --mode export,compile`` with the GPU
visible, and whether the two agree; then the agreement and the median seconds of each side,
under a line naming the GPU, torch and Python. fx-lsp is also watched with ``nvidia-smi`` for
the whole run: a process of it that holds the GPU is named.

    python3 -m benchmarks run gpu gpu_agreement [-- --device cpu --backend record]

``--device cpu --backend record`` runs the same comparison against real torch on the CPU with
the graphs uncompiled (no GPU and no C++ compiles: the benchmark's own check).
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.paths import REPOSITORY
from benchmarks.provenance import machine_line
from benchmarks.tables import emit, markdown
from fx_lsp.cli.output_formats.json_report import parse_report

CORPORA = (Path(REPOSITORY) / "tests" / "corpus" / "gpu",
           Path(REPOSITORY) / "tests" / "corpus" / "compile")


def gpu_name() -> str:
    if shutil.which("nvidia-smi") is None:
        return "no NVIDIA GPU"
    listed = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                            capture_output=True, text=True)
    return listed.stdout.strip().splitlines()[0] if listed.returncode == 0 else "unknown GPU"


def _gpu_holders() -> set[int]:
    if shutil.which("nvidia-smi") is None:
        return set()
    listed = subprocess.run(["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader"],
                            capture_output=True, text=True)
    return {int(pid) for pid in listed.stdout.split() if pid.strip().isdigit()}


def _fx_lsp(workspace: Path) -> tuple[dict, float, set[int]]:
    """fx-lsp's report, its wall seconds, and the pids holding the GPU while it ran that are
    not the GPU's holders from before it started."""
    before = _gpu_holders()
    started = time.perf_counter()
    # The report goes to a file: a pipe nobody reads while the run is watched fills and
    # stops it.
    with tempfile.TemporaryFile("w+") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--mode",
             "export,compile", "--output-format", "json", "."], cwd=workspace, stdout=output,
            stderr=subprocess.DEVNULL, text=True)
        holders: set[int] = set()
        while process.poll() is None:
            holders |= _gpu_holders() - before
            time.sleep(0.2)
        output.seek(0)
        return parse_report(output.read()), time.perf_counter() - started, holders


def _real(corpus: Path, device: str, backend: str) -> dict[str, dict]:
    completed = subprocess.run(
        [sys.executable, str(Path(REPOSITORY) / "scripts" / "compile_ground_truth.py"),
         "--device", device, "--backend", backend, "--seconds", "--corpus", str(corpus)],
        capture_output=True, text=True, check=True)
    return json.loads(completed.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help="cuda (default), or cpu")
    parser.add_argument("--backend", default="inductor",
                        help="the real side's backend: inductor (default), or record (the "
                             "graphs uncompiled: a quick run of the benchmark itself)")
    arguments = parser.parse_args()
    print(machine_line())
    if arguments.device == "cuda" and gpu_name() == "no NVIDIA GPU":
        print("no NVIDIA GPU here: nothing to measure (`-- --device cpu --backend record` "
              "runs the benchmark itself on the CPU)")
        return
    import torch  # the version only: this process runs nothing on the GPU

    print(f"GPU: {gpu_name()}  torch {torch.__version__}  Python {platform.python_version()}"
          f"  real side on {arguments.device}")
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        for corpus in CORPORA:
            for path in corpus.glob("*.py"):
                shutil.copy(path, workspace)
        report, fx_seconds, holders = _fx_lsp(workspace)
    real = {key: answer for corpus in CORPORA for key, answer in
            _real(corpus, arguments.device, arguments.backend).items()}
    ours: dict[str, set[tuple[int, str]]] = {key: set() for key in real}
    seconds: dict[str, float] = {}
    for module in report["modules"]:
        key = f"{Path(module['path']).name}:{module['class']}"
        if module["mode"] == "compile" and key in real:
            seconds[key] = module.get("trace_seconds") or 0.0
    for diagnostic in report["diagnostics"]:
        key = f"{Path(diagnostic['path']).name}:{diagnostic['classes'][0]}"
        if diagnostic["mode"] == "compile" and key in ours:
            ours[key].add((diagnostic["line"], diagnostic["code"]))
    rows, agree = [], 0
    for key, answer in sorted(real.items()):
        expected = {(line, code) for line, code in answer["breaks"]}
        same = expected == ours[key]
        agree += same
        rows.append((key, sorted(expected) or "whole", sorted(ours[key]) or "whole",
                     "yes" if same else "NO", f"{answer.get('seconds', 0.0):.2f}",
                     f"{seconds.get(key, 0.0):.2f}"))
    emit("gpu_agreement", markdown(
        ("class", f"real torch ({arguments.device}, {arguments.backend})", "fx-lsp", "agree",
         "real cold compile s", "fx-lsp s"), rows))
    print(f"agree: {agree}/{len(real)}; median seconds: real "
          f"{statistics.median(answer.get('seconds', 0.0) for answer in real.values()):.2f}, "
          f"fx-lsp {statistics.median(seconds.values() or [0.0]):.2f} per class "
          f"({fx_seconds:.1f} s for the whole check, export included)")
    print("fx-lsp processes holding the GPU: " + (", ".join(map(str, sorted(holders)))
                                                  if holders else "none"))


if __name__ == "__main__":
    main()
