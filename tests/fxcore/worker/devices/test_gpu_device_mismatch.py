"""A class written with a tensor made without a device (``torch.arange(n)``, on the CPU) beside
its CUDA weights fails on a GPU, eagerly and under export and compile (an H200 with torch 2.11:
benchmarks/gpu/answers/, ``export_traceable.py:PositionalEmbedding``). Judged for a GPU, fx-lsp
says so on every series: the capture's error is the one the class raises eagerly on any input,
so each mode gives "does not fit" (FX406, FX504) naming the two devices. Before, compile read
dynamo's page address (meta-pytorch.github.io) as the meta device ("not checkable", FX503), and
on torch 2.13 the eager run's ``FakeTensorDeviceMismatchError`` did not count as the
``RuntimeError`` compile named (FX502)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from fx_lsp.cli.output_formats.json_report import parse_report

import cli_support

pytestmark = pytest.mark.matrix

CORPUS = Path(__file__).resolve().parents[3] / "corpus" / "export" / "export_traceable.py"


def test_a_cpu_tensor_beside_cuda_weights_does_not_fit_a_gpu(tmp_path: Path) -> None:
    shutil.copy(CORPUS, tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.fx-lsp]\ndevice = "cuda"\n')
    completed = cli_support.fx_lsp("check", "--no-cache", "--mode", "export,compile",
                                   "--output-format", "json", ".", cwd=tmp_path)
    assert completed.returncode in (0, 1), completed.stderr
    report = parse_report(completed.stdout)
    codes = {d["mode"]: (d["code"], d["line"]) for d in report["diagnostics"]
             if d["classes"] == ["PositionalEmbedding"]}
    # forward's last line: ``self.positions(positions)`` with the CPU positions.
    assert codes == {"export": ("FX406", 60), "compile": ("FX504", 60)}
    for module in report["modules"]:
        if module["class"] == "PositionalEmbedding":
            assert "cuda:0" in module["reason"] and "cpu" in module["reason"], module["reason"]


HELD = Path(__file__).resolve().parents[3] / "corpus" / "gpu" / "held_tensors.py"
#: A table made for CUDA in ``__init__``: on a GPU the class builds and runs whole.
MADE_FOR_CUDA = """\
import torch
from torch import nn


class MadeForCuda(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.table = torch.ones(8, device="cuda") * 2
        self.wide = torch.ones(8).to("cuda", torch.float64)

    def forward(self, x):
        assert self.wide.dtype == torch.float64
        return self.proj(x.cuda()) + self.table + self.wide.float()


# A CPU-held table the code moves itself, and a CPU arange that meets CUDA tensors: the table
# is not what fails on a GPU, and no note names it.
class HeldButMoved(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.table = torch.ones(8)

    def forward(self, x):
        return self.proj(x.cuda()) + self.table.cuda() + torch.arange(8)
"""


def test_a_held_tensor_is_where_model_to_leaves_it(tmp_path: Path) -> None:
    """``model.to("cuda")`` leaves a plain tensor attribute where ``__init__`` made it. Made
    on the default device (``HeldAttribute``), it is a CPU tensor beside CUDA ones on a GPU,
    which fails the class on any input (an H200: benchmarks/gpu/answers/): fx-lsp gives that
    failure in each mode at the line, naming the tensor, where it said traceable before 28f2b61
    and "not checkable" (no input runs) after it. A 0-dim one (``HeldScalar``) is a
    scalar to CUDA kernels; one made for CUDA (``MadeForCuda``, and what is computed from it)
    is on the GPU, where the constructor failed before (FX101: a real CUDA tensor)."""
    shutil.copy(HELD, tmp_path)
    (tmp_path / "made.py").write_text(MADE_FOR_CUDA)
    # Inputs given: HeldButMoved's captures run and fail, and their failure is looked at.
    (tmp_path / "pyproject.toml").write_text(
        '[tool.fx-lsp.modules."made:HeldButMoved"]\ninputs = { x = "float32[2, 8]" }\n')
    completed = cli_support.fx_lsp("check", "--no-cache", "--mode", "export,compile",
                                   "--output-format", "json", ".", cwd=tmp_path)
    assert completed.returncode in (0, 1), completed.stderr
    verdicts = {(module["class"], module["mode"]): module
                for module in parse_report(completed.stdout)["modules"]}
    for mode in ("export", "compile"):
        assert verdicts["HeldScalar", mode]["status"] == "traceable"
        assert verdicts["MadeForCuda", mode]["status"] == "traceable", \
            verdicts["MadeForCuda", mode]["reason"]
        held = verdicts["HeldAttribute", mode]
        assert held["status"] == "failed", held["reason"]
        (failure,) = held["failures"]
        # forward's line: ``self.proj(x.cuda()) + self.table``.
        assert (failure["code"], failure["line"]) == (
            {"export": "FX499", "compile": "FX502"}[mode], 19)
    messages = {d["mode"]: d["message"] for d in parse_report(completed.stdout)["diagnostics"]
                if d["classes"] == ["HeldAttribute"]}
    assert set(messages) == {"export", "compile"}
    for message in messages.values():
        assert "cuda:0" in message and "cpu" in message, message
        assert "(fx-lsp: `table` is a tensor" in message and "register_buffer" in message
    moved = [verdicts["HeldButMoved", mode] for mode in ("export", "compile")]
    assert all(module["status"] != "traceable" for module in moved), moved
    assert not any("`table`" in text for text in [
        *(module["reason"] or "" for module in moved),
        *(d["message"] for d in parse_report(completed.stdout)["diagnostics"]
          if d["classes"] == ["HeldButMoved"])])


#: CUDA tensors the module makes as it is imported, outside every class: a GPU runs the class.
MADE_AT_IMPORT = """\
import torch
from torch import nn

MASK = torch.ones(4, device="cuda")
SCALE = torch.full((4,), 2.0).cuda()
HOST = torch.ones(4)


class MadeAtImport(nn.Module):
    def forward(self, x, bias=torch.zeros(4).to("cuda")):
        return x.cuda()[:, :4] * MASK * SCALE + bias


class HostAtImport(nn.Module):
    def forward(self, x):
        return x.cuda()[:, :4] * MASK * HOST
"""
#: CUDA initialised at import by a default device, which no factory's argument names.
DEFAULT_DEVICE_AT_IMPORT = """\
import torch
from torch import nn

torch.set_default_device("cuda")
TABLE = torch.ones(4)
torch.set_default_device("cpu")


class DefaultDevice(nn.Module):
    def forward(self, x):
        return x.cuda() * TABLE
"""


def test_cuda_tensors_made_at_import_are_the_gpu_s(tmp_path: Path) -> None:
    """A module-level ``torch.ones(4, device="cuda")``, ``.cuda()`` or a default argument
    ``.to("cuda")`` made a real CUDA tensor as the file was imported: on a CPU build no kernel
    ("Could not run 'aten::empty.memory_format' with arguments from the 'CUDA' backend"), on a
    CUDA build the driver's (tests/fxcore/worker/devices/test_driver_loads.py), and the file
    could not be imported (FX100). Made on meta and faked as CUDA tensors, they meet the
    inputs as on a GPU: the class exports and compiles, and a CPU tensor of the module beside
    them fails as it does there. Anything else that initialises CUDA at import is refused,
    saying why."""
    (tmp_path / "made_at_import.py").write_text(MADE_AT_IMPORT)
    (tmp_path / "default_device.py").write_text(DEFAULT_DEVICE_AT_IMPORT)
    completed = cli_support.fx_lsp("check", "--no-cache", "--mode", "export,compile",
                                   "--output-format", "json", ".", cwd=tmp_path)
    assert completed.returncode in (0, 1), completed.stderr
    report = parse_report(completed.stdout)
    verdicts = {(module["class"], module["mode"]): module for module in report["modules"]}
    for mode in ("export", "compile"):
        made = verdicts["MadeAtImport", mode]
        assert made["status"] == "traceable", made["reason"]
        host = verdicts["HostAtImport", mode]
        assert host["status"] != "traceable" and "cuda:0" in host["reason"] \
            and "cpu" in host["reason"], host["reason"]
    (refused,) = [d for d in report["diagnostics"] if d["path"].endswith("default_device.py")]
    assert refused["code"] == "FX100" and "initialises CUDA as it is imported" in \
        refused["message"], refused
