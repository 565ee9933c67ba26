"""Inputs that need no fx trace (issue 33): where torch.fx stops before any layer (a branch on
the input's shape), export and compile still get inputs, read from the module's first layer
whose input size is known and accepted when the model runs on them; each verdict on them
agrees with real torch.export and torch.compile on CPU, on the same instance and inputs."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from fx_lsp.json_report import parse_report
from fxcore.model.tensor_spec import parse_spec
from fxcore.worker.layer_inputs import layer_inputs

import cli_support

#: ``examples/``' ConvBlock branches on its input's width: torch.fx stops at the branch.
EXAMPLE_LAYERS = Path(__file__).resolve().parent.parent / "examples" / "models" / "layers.py"
WORKSPACE = '''
from torch import nn


class CropsLongSignals(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(4, 16, kernel_size=5)

    def forward(self, signal):
        if signal.shape[-1] > 48:
            signal = signal[..., :48]
        return self.conv(signal)


class NeedsLargeImages(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU())

    def forward(self, image):
        if image.shape[-1] < 60:
            raise ValueError("images of at least 60 pixels")
        return self.stem(image).mean()
'''


class TwoStreams(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return self.linear(x) * mask


class NoKnownLayer(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


class Padded(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.conv(x))


def test_the_first_known_layer_decides_and_the_model_must_run_on_it() -> None:
    with torch.device("meta"):
        padded = Padded()
    found = layer_inputs(Padded, padded, "meta", {}, seconds=30)
    assert found is not None
    assert {name: str(spec) for name, spec in found.specs.items()} == \
        {"x": "float32[2, 3, 32, 32]"}
    assert "`conv` (Conv2d)" in found.note
    # Real weights: run on fake tensors, nothing computed.
    assert layer_inputs(Padded, Padded(), "cpu", {}, seconds=30) == found


def test_no_inputs_without_one_required_argument_or_a_known_layer() -> None:
    assert layer_inputs(TwoStreams, TwoStreams(), "cpu", {}, seconds=30) is None
    assert layer_inputs(NoKnownLayer, NoKnownLayer(), "cpu", {}, seconds=30) is None
    # A concrete argument is not an input: one required argument is left.
    assert layer_inputs(TwoStreams, TwoStreams(), "cpu", {"mask": 1.0}, seconds=30) is not None


def _real_verdicts(path: Path, class_name: str, spec_text: str) -> tuple[str, str]:
    """Real torch.export and torch.compile (fullgraph) on CPU, on the class built as fx-lsp
    built it (defaults) and a random tensor of the inputs' spec."""
    spec = importlib.util.spec_from_file_location(f"layer_inputs_{class_name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    model = getattr(module, class_name)()
    shape = parse_spec(spec_text)
    x = torch.randn(*shape.shape)
    try:
        torch.export.export(model, (x,))
        exported = "traceable"
    except Exception:
        exported = "failed"
    torch._dynamo.reset()
    try:
        torch.compile(model, backend="eager", fullgraph=True)(x)
        compiled = "traceable"
    except Exception:
        compiled = "failed"
    return exported, compiled


def test_export_and_compile_verdicts_where_fx_stops_agree_with_real_torch(tmp_path: Path) -> None:
    (tmp_path / "blocks.py").write_text(WORKSPACE)
    (tmp_path / "layers.py").write_text(EXAMPLE_LAYERS.read_text(encoding="utf-8"))
    completed = cli_support.fx_lsp("check", "--no-cache", "--mode", "fx,export,compile",
                                   "--output-format", "json", ".", cwd=tmp_path)
    report = parse_report(completed.stdout)
    verdicts = {(module["class"], module["mode"]): module for module in report["modules"]}
    files = {"ConvBlock": "layers.py", "CropsLongSignals": "blocks.py",
             "NeedsLargeImages": "blocks.py"}
    for name, file in files.items():
        assert verdicts[(name, "fx")]["status"] == "failed"  # torch.fx stops at the branch
        export, compile_ = verdicts[(name, "export")], verdicts[(name, "compile")]
        assert export["inputs"]["from"] == compile_["inputs"]["from"] == "inferred"
        (spec_text,) = export["inputs"]["tensors"].values()
        real = _real_verdicts(tmp_path / file, name, spec_text)
        assert (export["status"], compile_["status"]) == real == ("traceable", "traceable")
    # The first size tried does not run: the next one that does is taken.
    assert verdicts[("NeedsLargeImages", "export")]["inputs"]["tensors"] == \
        {"image": "float32[2, 3, 64, 64]"}
