"""The GPU tier (``pytest -m gpu``): run where an NVIDIA GPU is, skipped elsewhere.

With the GPU visible, fx-lsp judges the GPU-written corpus (tests/corpus/gpu) and the compile
corpus (tests/corpus/compile) for a GPU (``device = "cuda"``), and no fx-lsp process holds a
CUDA context meanwhile (``nvidia-smi`` lists every process that does). Then real torch runs
each class on the GPU, in a child process per file (``benchmarks/gpu/gpu_answers``: rebuilt
from fx-lsp's arguments, moved to the GPU, on real tensors of fx-lsp's inputs; non-strict
``torch.export``, and ``torch.compile`` with dynamo's own log of its breaks), and each export
and compile verdict equals real torch's, as that benchmark judges them. The test process
itself never initialises CUDA. Inductor's cold compile on CUDA, and its seconds, are
``gpu_agreement``'s."""

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
from test_gpu_recorded_answers import KNOWN

from benchmarks.gpu.gpu_answers import CHECK, by_file, judged, real_answers, workspace
from fx_lsp.cli.output_formats.json_report import parse_report


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
        process = subprocess.Popen([sys.executable, *CHECK], cwd=workspace, stdout=output,
                                   stderr=subprocess.DEVNULL, text=True)
        on_gpu: set[int] = set()
        while process.poll() is None:
            on_gpu |= (_gpu_processes() or set()) & _descendants(process.pid)
            time.sleep(0.2)
        assert process.returncode in (0, 1)
        output.seek(0)
        return parse_report(output.read()), on_gpu


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any], set[int]]:
    root = workspace(tmp_path_factory.mktemp("gpu-tier").resolve(), ["gpu", "compile"], "cuda")
    return (root, *_checked_while_watching(root))


def test_no_fx_lsp_process_holds_the_gpu(checked: tuple[Path, dict[str, Any], set[int]]) -> None:
    _, report, on_gpu = checked
    assert on_gpu == set()
    assert "Cannot re-initialize CUDA" not in json.dumps(report)


def test_export_and_compile_verdicts_equal_real_torch_on_the_gpu(
        checked: tuple[Path, dict[str, Any], set[int]]) -> None:
    root, report, _ = checked
    classes = by_file(report, root)
    figures = judged(classes, real_answers(root, classes, "cuda"))
    assert figures.tried["export"] == figures.tried["compile"] > 0
    lines = [line.replace(f"{root}/", "") for line in figures.disagreements]
    # The differences of fx-lsp's own (its inputs), as the record's test lists them.
    assert [line for line in lines if not line.startswith(tuple(KNOWN))] == []
    assert figures.own_choices == []
