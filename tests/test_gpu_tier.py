"""The GPU tier (``pytest -m gpu``): run where an NVIDIA GPU is, skipped elsewhere.

With the GPU visible, no fx-lsp process holds a CUDA context (``nvidia-smi`` lists every
process that does), and fx-lsp's compile verdicts on the GPU-written corpus (tests/corpus/gpu)
and the compile corpus (tests/corpus/compile) equal real torch's on that GPU, computed in the
same run: real CUDA tensors and inductor (``scripts/compile_ground_truth.py --device cuda
--backend inductor``). The test process itself never initialises CUDA: real torch runs in a
script of its own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPORA = {"gpu": ROOT / "tests" / "corpus" / "gpu",
           "compile": ROOT / "tests" / "corpus" / "compile"}


def _gpu_processes() -> set[int] | None:
    """The pids holding a CUDA context now, as the driver lists them; None without a GPU."""
    if shutil.which("nvidia-smi") is None:
        return None
    listed = subprocess.run(["nvidia-smi", "--query-compute-apps=pid",
                             "--format=csv,noheader"], capture_output=True, text=True)
    gpus = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True)
    if listed.returncode != 0 or "GPU" not in gpus.stdout:
        return None
    return {int(line) for line in listed.stdout.split() if line.strip().isdigit()}


pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(_gpu_processes() is None, reason="no NVIDIA GPU here")]


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_bytes()
            except OSError:
                continue
            parent = int(stat[stat.rfind(b")") + 2:].split()[1])
            children.setdefault(parent, []).append(int(name))
    found, todo = set(), [pid]
    while todo:
        current = todo.pop()
        found.add(current)
        todo.extend(children.get(current, []))
    return found


def _checked_while_watching(workspace: Path) -> tuple[dict[str, Any], set[int]]:
    """fx-lsp's JSON report over ``workspace``, and the pids of its process tree that held a
    CUDA context at any moment of the run."""
    # The report goes to a file: a pipe nobody reads while the run is watched fills and
    # stops it.
    with tempfile.TemporaryFile("w+") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--mode",
             "export,compile", "--output-format", "json", "."], cwd=workspace, stdout=output,
            stderr=subprocess.DEVNULL, text=True)
        on_gpu: set[int] = set()
        while process.poll() is None:
            on_gpu |= (_gpu_processes() or set()) & _descendants(process.pid)
            time.sleep(0.2)
        assert process.returncode in (0, 1)
        output.seek(0)
        return json.loads(output.read()), on_gpu


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], set[int]]:
    workspace = tmp_path_factory.mktemp("gpu-tier")
    for corpus in CORPORA.values():
        for path in corpus.glob("*.py"):
            shutil.copy(path, workspace)
    return _checked_while_watching(workspace)


def test_no_fx_lsp_process_holds_the_gpu(checked: tuple[dict[str, Any], set[int]]) -> None:
    report, on_gpu = checked
    assert on_gpu == set()
    assert "Cannot re-initialize CUDA" not in json.dumps(report)


@pytest.mark.parametrize("corpus", sorted(CORPORA))
def test_compile_verdicts_equal_real_torch_on_the_gpu(
        checked: tuple[dict[str, Any], set[int]], corpus: str) -> None:
    report, _ = checked
    real = json.loads(subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "compile_ground_truth.py"), "--device", "cuda",
         "--backend", "inductor", "--corpus", str(CORPORA[corpus])],
        capture_output=True, text=True, check=True, timeout=1800).stdout)
    ours: dict[str, set[tuple[int, str]]] = {key: set() for key in real}
    for diagnostic in report["diagnostics"]:
        if diagnostic["mode"] != "compile":
            continue
        key = f"{Path(diagnostic['path']).name}:{diagnostic['classes'][0]}"
        if key in ours:
            ours[key].add((diagnostic["line"], diagnostic["code"]))
    assert {key: sorted(breaks) for key, breaks in ours.items()} == \
        {key: sorted((line, code) for line, code in answer["breaks"])
         for key, answer in real.items()}
