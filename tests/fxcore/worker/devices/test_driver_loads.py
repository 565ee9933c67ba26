"""No fx-lsp process reaches the CUDA driver from C++ either, on a CUDA build of torch without
a GPU (the torch matrix's venvs). The dynamic loader logs which object loads each library
(``LD_DEBUG=files``: "file=libcuda.so.1; dynamically loaded by ..."), in the CLI, the zygote and
the workers forked from it (the zygote is given the variables, ``worker_environment``), and no
load of the driver's ``libcuda.so.1`` or NVML's ``libnvidia-ml.so.1`` may come from the CUDA
runtime or torch's CUDA code (``libcudart``'s ``cudaGetDeviceCount``, ``libc10_cuda``,
``libtorch_cuda``): that is the driver's initialisation path, which ``FakeTensorMode.__enter__``
took through ``torch._C._ensureCUDADeviceGuardSet()`` in the zygote's export warm-up before any
fork (``fxcore.worker.devices.accelerator_guard``). The loaders that run when torch itself is
imported (cuBLASLt's, cuSPARSELt's and cuda-bindings' look for the driver's library, loading it
without initialising it) are torch's import, which any process that imports torch makes.

The workers judging classes written for a GPU are recorded too, whatever ``device`` says
(``test_no_worker_judging_gpu_written_classes_reaches_the_cuda_runtime``): each model file
notes the pid of the worker importing it, and every such pid must be in the log. One of them
makes CUDA tensors as it is imported (``made_at_import.py``), which the CUDA kernel made, loading
the driver, before the view made them on meta; another makes CUDA generators as it is imported
and in ``__init__`` (``cuda_generators.py``), which torch's CUDA generator made, loading the
driver, before the view made its own (``fxcore.worker.devices.cuda_generators``). The workers
of classes judged for the CPU that make CUDA generators are recorded the same way
(``test_no_worker_judging_a_cpu_class_that_makes_cuda_generators_reaches_the_cuda_runtime``):
before torch 2.13 nothing caught the call there, and torch's CUDA generator loaded the driver.

The mutant the test must catch, the old bug: the warm-up run before the guard is in place
(``test_a_warm_up_before_the_guard_is_caught``). Where a driver is installed (a GPU machine),
torch's import loads it through cuBLASLt before anything else, so the loader logs no later
load: there these tests see nothing, and the GPU tier's watch of the processes holding the GPU
(tests/fxcore/worker/devices/test_gpu_tier.py) is the check."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytestmark = [
    pytest.mark.matrix, pytest.mark.slow,
    pytest.mark.skipif(torch.version.cuda is None,
                       reason="a CPU build of torch has no CUDA runtime to reach"),
]

ROOT = Path(__file__).resolve().parents[4]
#: A class every mode captures: the zygote's warm-ups, then the workers' captures.
MODEL = """\
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4)

    def forward(self, x):
        return self.fc(x).relu()
"""
#: Classes written for a GPU, one file each, each reaching CUDA as such code does: judged in the
#: GPU's view, in workers that set up CUDA's device guard, index CUDA tensors and trace them.
GPU_MODELS = {
    "moves.py": """\
from torch import nn


class MovesToCuda(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 4).cuda()

    def forward(self, x):
        return self.fc(x.cuda()).relu()
""",
    "made_on_cuda.py": """\
import torch
from torch import nn


class MadeOnCuda(nn.Module):
    def forward(self, x):
        return x[:, :4] * torch.ones(4, device="cuda")
""",
    "autocast.py": """\
import torch
from torch import nn


class Autocast(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        with torch.cuda.amp.autocast():
            return self.fc(x)
""",
    "availability.py": """\
import torch
from torch import nn


class BranchesOnAvailability(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)
        self.device = "cuda" if torch.cuda.is_available() else "cpu"

    def forward(self, x):
        if torch.cuda.is_available():
            x = x.to(self.device)
        return self.fc(x)[x[:, 0] > 0]
""",
    # CUDA tensors made as the module is imported, outside every class: a real CUDA tensor
    # there is the CUDA kernel, which loads the driver.
    "made_at_import.py": """\
import torch
from torch import nn

MASK = torch.ones(4, device="cuda")
SCALE = torch.full((4,), 2.0).cuda()


class MadeAtImport(nn.Module):
    def forward(self, x, bias=torch.zeros(4).to("cuda")):
        return x[:, :4] * MASK * SCALE + bias
""",
    # CUDA generators, made as the module is imported and in __init__: torch's CUDA generator
    # asks the CUDA runtime for the current stream as it is made, which loads the driver.
    "cuda_generators.py": """\
import torch
from torch import nn

NOISE = torch.Generator("cuda")


class DrawsOnCuda(nn.Module):
    def __init__(self):
        super().__init__()
        self.generator = torch.Generator(device="cuda")
        self.generator.manual_seed(1)

    def forward(self, x):
        keep = torch.rand(x.shape, generator=self.generator, device=x.device) > 0.25
        return (x + torch.randn(x.shape, generator=NOISE, device=x.device)) * keep
""",
}
#: Classes judged for the CPU that make CUDA generators, as they are imported, built and run:
#: torch's CUDA generator asks the CUDA runtime for the current stream as it is made (loading
#: the driver), and no Python code runs before it unless fx-lsp's guard catches the call.
CPU_JUDGED_GENERATORS = {
    "generator_at_import.py": """\
import torch
from torch import nn

NOISE = torch.Generator("cuda")


class GeneratorAtImport(nn.Module):
    def forward(self, x):
        return x + 1
""",
    "generator_in_init.py": """\
import torch
from torch import Generator, nn


class GeneratorInInit(nn.Module):
    def __init__(self):
        super().__init__()
        self.generator = Generator(device="cuda")

    def forward(self, x):
        return x + 1
""",
    "generator_in_forward.py": """\
import torch
from torch import nn


class GeneratorInForward(nn.Module):
    def forward(self, x):
        generator = torch.Generator(torch.device("cuda", 0))
        return x + torch.rand(x.shape, generator=generator, device=x.device)
""",
}
#: Run at each model file's import, in the worker judging it: the worker's pid is kept, and a
#: library opened so that the loader logs a line of that pid, whatever the capture loads.
PROBE = """\
import ctypes, os, pathlib
pathlib.Path(__file__).with_name("pids").joinpath(str(os.getpid())).touch()
ctypes.CDLL("libm.so.6")
"""
#: The loader's line for a driver library, naming the object that loaded it.
DRIVER_LOAD = re.compile(
    r"^\s*(\d+):\s+file=(libcuda\.so[.\d]*|libnvidia-ml\.so[.\d]*) \[\d+\];\s+"
    r"dynamically loaded by (\S+)", re.MULTILINE)
#: The CUDA runtime and torch's CUDA code: a driver load by one of them initialises it.
RUNTIME = re.compile(r"/(libcudart|libc10_cuda|libtorch_cuda)[^/]*\.so")


def _loads(log_folder: Path) -> list[tuple[str, str, str]]:
    """(pid, library, loader) of every driver library load the logs hold."""
    return [match.groups() for path in log_folder.iterdir()
            for match in DRIVER_LOAD.finditer(path.read_text(errors="replace"))]


def _logged(command: list[str], cwd: Path, log_folder: Path) -> list[tuple[str, str, str]]:
    return _logged_run(command, cwd, log_folder)[0]


def _logged_run(command: list[str], cwd: Path,
                log_folder: Path) -> tuple[list[tuple[str, str, str]], str]:
    """The driver library loads of ``command``'s processes, and what it printed."""
    log_folder.mkdir()
    completed = subprocess.run(
        command, cwd=cwd, capture_output=True, text=True, timeout=600, check=False,
        env={**os.environ, "LD_DEBUG": "files", "LD_DEBUG_OUTPUT": str(log_folder / "ld")})
    assert completed.returncode in (0, 1), completed.stderr[-3000:]
    return _loads(log_folder), completed.stdout


def _logged_pids(log_folder: Path) -> set[str]:
    return {line.split(":")[0].strip() for path in log_folder.iterdir()
            for line in path.read_text(errors="replace").splitlines() if ":" in line}


def _from_runtime(loads: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    return [load for load in loads if RUNTIME.search(load[2])]


@pytest.mark.matrix_sweep  # heavy: an edge series only (test-torch-matrix.sh)
def test_no_process_of_a_check_reaches_the_cuda_runtime(tmp_path: Path) -> None:
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "model.py").write_text(MODEL)
    loads = _logged([sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--mode",
                     "fx,export,compile", "--output-format", "concise", "."],
                    workspace, tmp_path / "logs")
    # The log is live: the CLI and the zygote wrote a file each (workers, forked from the
    # zygote, write to its file), torch's import in the zygote looked for the driver's library,
    # and the workers loaded what their captures needed.
    logs = list((tmp_path / "logs").iterdir())
    assert len(logs) >= 2 and loads, (logs, loads)
    logged_pids = _logged_pids(tmp_path / "logs")
    assert len(logged_pids) >= 3, logged_pids
    assert _from_runtime(loads) == []


@pytest.mark.matrix_sweep  # heavy: an edge series only (test-torch-matrix.sh)
@pytest.mark.skipif(shutil.which("nvidia-smi") is not None,
                    reason="with a driver installed, torch's import (cuBLASLt) loads it first, "
                           "so the loader logs no later load of it: the mutant shows only "
                           "where no driver is (seen on an H200)")
def test_a_warm_up_before_the_guard_is_caught(tmp_path: Path) -> None:
    """The mutant: torch.export's warm-up run before ``accelerator_guard.guard()``, as the
    zygote ran it before the guard covered the device guard's count."""
    script = ("from fxcore.worker.capture.export.exporting import ExportCapture\n"
              "ExportCapture().warm()\n"
              "from fxcore.worker.devices import accelerator_guard\n"
              "accelerator_guard.guard()\n")
    loads = _logged([sys.executable, "-c", script], ROOT, tmp_path / "logs")
    assert [library for _, library, _ in _from_runtime(loads)] == ["libcuda.so.1"], loads



@pytest.mark.matrix_sweep  # heavy: an edge series only (test-torch-matrix.sh)
@pytest.mark.parametrize("device", ["auto", "cuda"])
def test_no_worker_judging_gpu_written_classes_reaches_the_cuda_runtime(
        tmp_path: Path, device: str) -> None:
    """The workers of classes written for a GPU set up CUDA's no-op device guard, which on a
    CUDA build asked the build's own guard for its count (``cudaGetDeviceCount``) before."""
    workspace = tmp_path / "workspace"
    (workspace / "pids").mkdir(parents=True)
    (workspace / "pyproject.toml").write_text(f'[tool.fx-lsp]\ndevice = "{device}"\n')
    for name, source in GPU_MODELS.items():
        (workspace / name).write_text(PROBE + source)
    loads = _logged([sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--mode",
                     "fx,export,compile", "--output-format", "concise", "."],
                    workspace, tmp_path / "logs")
    # Every process is recorded: each worker that imported a model file logged its own lines.
    workers = {path.name for path in (workspace / "pids").iterdir()}
    assert workers and workers <= _logged_pids(tmp_path / "logs"), workers
    assert _from_runtime(loads) == []


@pytest.mark.matrix_sweep  # heavy: an edge series only (test-torch-matrix.sh)
def test_no_worker_judging_a_cpu_class_that_makes_cuda_generators_reaches_the_cuda_runtime(
        tmp_path: Path) -> None:
    """Judged for the CPU, ``torch.Generator("cuda")`` at import, in ``__init__`` (through
    ``from torch import Generator``) and in ``forward`` is refused with the guard's advice to
    judge the class for a GPU; before, torch's CUDA generator loaded the driver in the worker
    (before torch 2.13, where no metaclass of torch's catches the call)."""
    workspace = tmp_path / "workspace"
    (workspace / "pids").mkdir(parents=True)
    (workspace / "pyproject.toml").write_text(
        '[tool.fx-lsp]\ndevice = "cpu"\n\n'
        '[tool.fx-lsp.modules."generator_in_forward:GeneratorInForward"]\n'
        'inputs = {x = "float32[2, 8]"}\n')
    for name, source in CPU_JUDGED_GENERATORS.items():
        (workspace / name).write_text(PROBE + source)
    loads, report = _logged_run(
        [sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--mode", "fx,export,compile",
         "--output-format", "json", "."], workspace, tmp_path / "logs")
    workers = {path.name for path in (workspace / "pids").iterdir()}
    assert workers and workers <= _logged_pids(tmp_path / "logs"), workers
    assert _from_runtime(loads) == []
    # Each file was judged and met the refusal, which says how to judge the class for a GPU.
    refused = {diagnostic["path"].rsplit("/", 1)[-1]
               for diagnostic in json.loads(report)["diagnostics"]
               if "never initialise CUDA" in diagnostic["message"]
               and 'device = \"cuda\"' in diagnostic["message"]}
    assert refused == set(CPU_JUDGED_GENERATORS), report[-3000:]
