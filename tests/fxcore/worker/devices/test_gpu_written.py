"""Classes written for a GPU (tests/corpus/gpu) judged for one on this machine, which has no
GPU: ``device = "auto"`` reads the code; each class is imported, built and captured in the
CUDA view (fake CUDA tensors, torch.cuda answering as one GPU). Every class gets export and
compile verdicts; the only breaks are at the CUDA calls dynamo cannot put in a graph, each at
its line with its code, and the verdicts say they are for a GPU. The same corpus against real
torch on a GPU is the GPU tier's (tests/fxcore/worker/devices/test_gpu_tier.py)."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path
from typing import Any

import pytest

from fx_lsp.cli.output_formats.json_report import parse_report
from fxcore.worker.devices.device_choice import judged_device, written_for_cuda
from fxcore.worker.pipeline.capturing import GPU_NOTE
from fxcore.workspace.config import parse_config

import cli_support

#: The corpus's verdicts, made once for the module (over 20 s): the slow tier, and the matrix.
pytestmark = [pytest.mark.matrix, pytest.mark.slow]

CORPUS = Path(__file__).resolve().parents[3] / "corpus" / "gpu" / "gpu_written.py"


def _line_of(text: str) -> int:
    return next(number for number, line in enumerate(CORPUS.read_text().splitlines(), 1)
                if text in line)


#: The CUDA calls whose line dynamo breaks at, whatever the torch series: nvtx's ranges and
#: a branch on device_count (torch functions that return no tensor, GB0208). ``synchronize``
#: breaks on 2.10 to 2.12 (a skipped function, GB0007) and is an op in the graph from 2.13.
BREAKS = {("NvtxRanges", _line_of('range_push("proj")'), "GB0208"),
          ("NvtxRanges", _line_of("range_pop()"), "GB0208"),
          ("DeviceCountBranch", _line_of("device_count() > 1"), "GB0208")}
SYNCHRONIZE = ("Synchronized", _line_of("torch.cuda.synchronize()"), "GB0007")


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    workspace = tmp_path_factory.mktemp("gpu")
    shutil.copy(CORPUS, workspace)
    completed = cli_support.fx_lsp("check", "--no-cache", "--mode", "export,compile",
                                   "--output-format", "json", ".", cwd=workspace)
    assert completed.returncode in (0, 1), completed.stderr
    return parse_report(completed.stdout)


def test_every_class_written_for_a_gpu_exports_and_compiles(report: dict[str, Any]) -> None:
    names = {node.name for node in ast.parse(CORPUS.read_text()).body
             if isinstance(node, ast.ClassDef)}
    verdicts = {(module["class"], module["mode"]): module for module in report["modules"]}
    assert set(verdicts) == {(name, mode) for name in names for mode in ("export", "compile")}
    for (name, mode), module in verdicts.items():
        assert module["status"] in ("traceable", "failed"), (name, mode, module["reason"])
        # sdpa_kernel's context is not CUDA's own: that class is judged for the CPU.
        assert (GPU_NOTE in module["capture_notes"]) is (name != "MathAttention"), (name, mode)
    assert {name for (name, mode), module in verdicts.items()
            if mode == "export" and module["status"] == "traceable"} == names


def test_the_breaks_are_the_cuda_calls_a_gpu_breaks_at(report: dict[str, Any]) -> None:
    breaks = {(d["classes"][0], d["line"], d["code"]) for d in report["diagnostics"]
              if d["mode"] == "compile"}
    assert breaks - {SYNCHRONIZE} == BREAKS


@pytest.mark.parametrize(("source", "device"), [
    ("class M:\n    def forward(self, x):\n        return x.cuda()\n", "cuda"),
    ("class M:\n    def forward(self, x):\n        return torch.arange(3, device='cuda:0')\n",
     "cuda"),
    ("D = 'cuda' if torch.cuda.is_available() else 'cpu'\n"
     "class M:\n    def forward(self, x):\n        return x.to(D)\n", "cuda"),
    ("D = 'cuda'\nclass M:\n    def forward(self, x):\n        return x\n", "cpu"),
    ("class M:\n    def forward(self, x):\n        return x.to('cpu')\n", "cpu"),
    ("class M:\n    '''Runs on cuda or cpu.'''\n    def forward(self, x):\n        return x\n",
     "cpu"),
])
def test_auto_reads_the_class_and_the_module_names_it_uses(source: str, device: str) -> None:
    tree = ast.parse(source)
    assert written_for_cuda(tree, "M") is (device == "cuda")
    assert judged_device("auto", tree, "M") == device
    assert judged_device("cpu", tree, "M") == "cpu"
    assert judged_device("cuda", ast.parse("class M: pass"), "M") == "cuda"


def test_the_device_setting_is_validated() -> None:
    config, problems = parse_config({"device": "cuda"})
    assert (config.device, problems) == ("cuda", [])
    config, problems = parse_config({"device": "gpu"})
    assert config.device == "auto"
    assert problems == ["[tool.fx-lsp]: 'device' must be one of 'auto', 'cpu', 'cuda'; "
                        "ignored"]
