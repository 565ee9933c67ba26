"""fx-lsp's processes never initialise an accelerator (``fxcore.worker.devices``): the zygote
and every worker, recorded call by call (``accelerator_calls``) while they judge code written
for a GPU, code judged for the CPU that asks for CUDA anyway, and the compile corpus. On a
machine with a GPU this is what keeps the fork from being poisoned; here, with none, the record
is the proof. Under the torch matrix the same tests run on PyPI's CUDA builds, where
``torch.cuda.is_available()`` itself is a call into the driver."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from fxcore.host.worker_environment import HIDDEN_DEVICES
from fxcore.worker.devices.accelerator_calls import RECORD_VARIABLE

# Over 20 s each (real torch beside fx-lsp): the slow tier, and every torch series.
pytestmark = [pytest.mark.matrix, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[4]
GPU_CORPUS = ROOT / "tests" / "corpus" / "gpu" / "gpu_written.py"
COMPILE_CORPUS = ROOT / "tests" / "corpus" / "compile" / "breaks_calls.py"


def _check(workspace: Path, record: Path, *arguments: str) -> dict:
    completed = subprocess.run(
        [sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--mode", "export,compile",
         "--output-format", "json", *arguments, "."],
        cwd=workspace, capture_output=True, text=True, timeout=600,
        env={**os.environ, RECORD_VARIABLE: str(record)})
    assert completed.returncode in (0, 1), completed.stderr
    return json.loads(completed.stdout)


def _recorded(record: Path) -> list[dict]:
    if not record.exists():
        return []
    return [json.loads(line) for line in record.read_text().splitlines()]


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], tuple[dict, Path]]:
    """``checked(device)``: fx-lsp's report of both corpora with that ``device`` setting, and
    the record of its processes' calls; one run per device in this module (two tests read the
    CPU one: each run checks every class in two modes, a quarter of the file's time). The
    tests only read the report."""
    runs: dict[str, tuple[dict, Path]] = {}

    def run(device: str) -> tuple[dict, Path]:
        if device not in runs:
            folder = tmp_path_factory.mktemp(f"device-{device}")
            workspace = folder / "workspace"
            workspace.mkdir()
            shutil.copy(GPU_CORPUS, workspace)
            shutil.copy(COMPILE_CORPUS, workspace)
            (workspace / "pyproject.toml").write_text(f'[tool.fx-lsp]\ndevice = "{device}"\n')
            record = folder / "calls.jsonl"
            runs[device] = (_check(workspace, record), record)
        return runs[device]
    return run


@pytest.mark.matrix_sweep  # heavy: an edge series only (test-torch-matrix.sh)
@pytest.mark.parametrize("device", ["auto", "cpu"])
def test_no_process_of_fx_lsp_calls_an_accelerators_initialisation(
        checked: Callable[[str], tuple[dict, Path]], device: str) -> None:
    report, record = checked(device)
    assert _recorded(record) == []
    # The run judged what it was given: both files' classes, in both modes; with `auto`,
    # every class written for a GPU exports.
    judged = {(module["path"].rsplit("/", 1)[-1], module["mode"])
              for module in report["modules"]}
    assert judged == {(name, mode) for name in (GPU_CORPUS.name, COMPILE_CORPUS.name)
                      for mode in ("export", "compile")}
    if device == "auto":
        assert {module["status"] for module in report["modules"]
                if module["path"].endswith(GPU_CORPUS.name)
                and module["mode"] == "export"} == {"traceable"}


def test_code_judged_for_the_cpu_that_asks_for_cuda_is_told_how_to_judge_it_for_a_gpu(
        checked: Callable[[str], tuple[dict, Path]]) -> None:
    report, _ = checked("cpu")
    moves = [module for module in report["modules"] if module["class"] == "MovesInput"]
    texts = json.dumps(moves)
    assert 'device = \\"cuda\\"' in texts, texts
    assert "Cannot re-initialize CUDA" not in json.dumps(report)


def test_the_record_sees_a_call_of_the_initialisation(tmp_path: Path) -> None:
    """The instrument itself: without the guard, a lazy initialisation is recorded, with the
    line that asked for it."""
    record = tmp_path / "calls.jsonl"
    script = ("import torch\n"
              "from fxcore.worker.devices import accelerator_calls\n"
              f"accelerator_calls.record({str(record)!r})\n"
              "try:\n"
              "    torch.cuda.init()\n"
              "except Exception:\n"
              "    pass\n")
    subprocess.run([sys.executable, "-c", script], check=True, timeout=120,
                   env={**os.environ, "CUDA_VISIBLE_DEVICES": ""})
    calls = _recorded(record)
    assert [call["call"] for call in calls][:1] == ["torch.cuda._lazy_init"]
    assert 'line 5, in <module>' in "".join(calls[0]["stack"])


def test_the_guard_answers_no_device_and_refuses_initialisation() -> None:
    script = ("import torch\n"
              "from fxcore.worker.devices import accelerator_guard\n"
              "replaced = accelerator_guard.guard()\n"
              "assert 'torch.cuda._lazy_init' in replaced, replaced\n"
              "assert not torch.cuda.is_available() and torch.cuda.device_count() == 0\n"
              "try:\n"
              "    torch.zeros(1).cuda()\n"
              "except RuntimeError as error:\n"
              "    print(error)\n")
    # In the environment fx-lsp's zygote and workers have (its devices hidden): on a machine
    # with a GPU, the guard alone does not hide it from the driver's own count (NVML).
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True,
                               text=True, timeout=120, env={**os.environ, **HIDDEN_DEVICES})
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert "never initialise CUDA" in completed.stdout
    assert 'device = "cuda"' in completed.stdout
