"""Inputs that need no fx trace: where torch.fx stops before any layer (a branch on
the input's shape), export and compile still get inputs, read from the module's first layer
whose input size is known and accepted when the model runs on them; each verdict on them
agrees with real torch.export and torch.compile on CPU, on the same instance and inputs."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from source_modules import load_module
from torch import nn

from fx_lsp.cli.output_formats.json_report import parse_report
from fxcore.model.tensor_spec import parse_spec
from fxcore.worker.inputs.from_layers.first_layer import layer_inputs, runs_on

import cli_support

#: ``examples/``' ConvBlock branches on its input's width: torch.fx stops at the branch.
EXAMPLE_LAYERS = Path(__file__).resolve().parents[5] / "examples" / "models" / "layers.py"
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


class GatherPositions(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(100, 8)

    def forward(self, tokens, positions):
        if tokens.shape[-1] > 4:
            tokens = tokens[:, :4]
        hidden = self.embed(tokens)
        return hidden.gather(1, positions[:, :4].unsqueeze(-1).expand(-1, -1, 8))


class MaskedProjection(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, x, attention_mask):
        if x.shape[1] % 2:
            x = x[:, :-1]
            attention_mask = attention_mask[:, :-1]
        return self.proj(x).masked_fill(~attention_mask[..., None], 0.0)
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


class TakesOnlyFiveWide(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != 5:
            raise ValueError("five features")
        return x * 2


class Padded(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.conv(x))


def _in_this_file(path: str) -> bool:
    """The workspace of the tests that call ``layer_inputs`` directly: this file."""
    return path == __file__


def test_the_first_known_layer_decides_and_the_model_must_run_on_it() -> None:
    with torch.device("meta"):
        padded = Padded()
    found = layer_inputs(Padded, padded, "meta", {}, seconds=30,
                         is_workspace_path=_in_this_file)
    assert found is not None
    assert {name: str(spec) for name, spec in found.specs.items()} == \
        {"x": "float32[2, 3, 32, 32]"}
    assert "`conv` (Conv2d)" in found.note
    # Real weights: run on fake tensors, nothing computed.
    assert layer_inputs(Padded, Padded(), "cpu", {}, seconds=30,
                         is_workspace_path=_in_this_file) == found


def test_every_required_argument_gets_an_input_or_none_does() -> None:
    found = layer_inputs(TwoStreams, TwoStreams(), "cpu", {}, seconds=30,
                         is_workspace_path=_in_this_file)
    assert found is not None
    assert {name: str(spec) for name, spec in found.specs.items()} == \
        {"x": "float32[2, 8, 4]", "mask": "float32[2, 8, 4]"}
    assert "float32[2, 8, 4] for mask, the first companion" in found.note
    # No layer tells the size: the first plain shape the model runs on, or none.
    found = layer_inputs(NoKnownLayer, NoKnownLayer(), "cpu", {}, seconds=30,
                         is_workspace_path=_in_this_file)
    assert found is not None and {name: str(spec) for name, spec in found.specs.items()} == \
        {"x": "float32[2, 8]"}
    assert "no layer of NoKnownLayer tells its input's size" in found.note
    # Nothing fits: what the first plain shape met, at the model's line.
    refused = layer_inputs(TakesOnlyFiveWide, TakesOnlyFiveWide(), "cpu", {}, seconds=30,
                           is_workspace_path=_in_this_file)
    line = TakesOnlyFiveWide.forward.__code__.co_firstlineno + 2
    assert refused == ("float32[2, 8] a plain shape, raised ValueError: five features at "
                       f"test_layer_inputs.py:{line}")
    # A concrete argument is not an input: one required argument is left.
    found = layer_inputs(TwoStreams, TwoStreams(), "cpu", {"mask": 1.0}, seconds=30,
                         is_workspace_path=_in_this_file)
    assert found is not None and list(found.specs) == ["x"]


class KeepsPositive(nn.Module):
    """Repeats rows by counts from their values after its first layer: ``repeat_interleave``
    of a meta tensor (``nonzero`` on meta assumes every element nonzero, and goes on)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        scores = self.linear(x).flatten(0, -2)
        return scores.repeat_interleave((scores.sum(-1) > 0).long(), dim=0)


def test_a_run_on_meta_that_stops_for_want_of_data_accepts_its_inputs() -> None:
    """On meta the run stops at ``repeat_interleave``, which only real data answers: the
    inputs fit as far as meta goes, and the captures, on fake tensors, go on there."""
    with torch.device("meta"):
        on_meta = KeepsPositive()
    found = layer_inputs(KeepsPositive, on_meta, "meta", {}, seconds=30,
                         is_workspace_path=_in_this_file)
    assert not isinstance(found, str) and found is not None, found
    # A Linear's first candidate: a batch of sequences of its features.
    assert {name: str(spec) for name, spec in found.specs.items()} == \
        {"x": "float32[2, 8, 8]"}
    assert found.note.endswith(" as far as the meta device goes (a line repeats elements by "
                               "counts held in a tensor, which only real data answers)")
    assert runs_on(on_meta, "meta", found.specs, {}, seconds=30) is True


def _real_tensor(spec_text: str) -> torch.Tensor:
    """A CPU tensor of ``spec_text``: random values, booleans, or indices 0 (in range of any
    table and axis)."""
    spec = parse_spec(spec_text)
    if spec.dtype == "bool":
        return torch.randint(0, 2, spec.shape).bool()
    if spec.dtype.startswith("int"):
        return torch.zeros(spec.shape, dtype=getattr(torch, spec.dtype))
    return torch.randn(*spec.shape)


def _real_verdicts(path: Path, class_name: str, specs: dict[str, str]) -> tuple[str, str]:
    """Real torch.export and torch.compile (fullgraph) on CPU, on the class built as fx-lsp
    built it (defaults) and random tensors of the inputs' specs."""
    module = load_module(path, f"layer_inputs_{class_name}")
    model = getattr(module, class_name)()
    inputs = {name: _real_tensor(text) for name, text in specs.items()}
    try:
        torch.export.export(model, (), inputs)
        exported = "traceable"
    except Exception:
        exported = "failed"
    torch._dynamo.reset()
    try:
        torch.compile(model, backend="eager", fullgraph=True)(**inputs)
        compiled = "traceable"
    except Exception:
        compiled = "failed"
    return exported, compiled


@pytest.mark.slow
def test_export_and_compile_verdicts_where_fx_stops_agree_with_real_torch(tmp_path: Path) -> None:
    (tmp_path / "blocks.py").write_text(WORKSPACE)
    (tmp_path / "layers.py").write_text(EXAMPLE_LAYERS.read_text(encoding="utf-8"))
    completed = cli_support.fx_lsp("check", "--no-cache", "--mode", "fx,export,compile",
                                   "--output-format", "json", ".", cwd=tmp_path)
    report = parse_report(completed.stdout)
    verdicts = {(module["class"], module["mode"]): module for module in report["modules"]}
    files = {"ConvBlock": "layers.py", "CropsLongSignals": "blocks.py",
             "NeedsLargeImages": "blocks.py", "GatherPositions": "blocks.py",
             "MaskedProjection": "blocks.py"}
    for name, file in files.items():
        assert verdicts[(name, "fx")]["status"] == "failed"  # torch.fx stops at the branch
        export, compile_ = verdicts[(name, "export")], verdicts[(name, "compile")]
        assert export["inputs"]["from"] == compile_["inputs"]["from"] == "inferred"
        real = _real_verdicts(tmp_path / file, name, export["inputs"]["tensors"])
        assert (export["status"], compile_["status"]) == real == ("traceable", "traceable")
    # Every required argument has an input: indices, a boolean mask.
    assert verdicts[("GatherPositions", "export")]["inputs"]["tensors"] == \
        {"tokens": "int64[2, 8]", "positions": "int64[2, 8]"}
    assert verdicts[("MaskedProjection", "compile")]["inputs"]["tensors"] == \
        {"x": "float32[2, 8, 16]", "attention_mask": "bool[2, 8]"}
    # The first size tried does not run: the next one that does is taken.
    assert verdicts[("NeedsLargeImages", "export")]["inputs"]["tensors"] == \
        {"image": "float32[2, 3, 64, 64]"}


def test_a_module_no_input_runs_says_what_the_likeliest_one_met(tmp_path: Path) -> None:
    """A module that runs on no input (vit-pytorch's LocalViT normalizes the wrong axis; here
    two norms want different widths of one tensor, so that no size the operations fix
    runs either): its "no example inputs" says what the input its first layer takes met,
    and where."""
    (tmp_path / "flat.py").write_text(
        "from torch import nn\n\n\n"
        "class NormOnFlat(nn.Module):\n"
        "    def __init__(self, dim=16):\n"
        "        super().__init__()\n"
        "        self.norm = nn.LayerNorm(dim)\n"
        "        self.half = nn.LayerNorm(dim // 2)\n\n"
        "    def forward(self, x):\n"
        "        return self.norm(x.flatten(1)) + self.half(x.flatten(1))\n")
    completed = cli_support.fx_lsp("check", "--no-cache", "--mode", "export,compile",
                                   "--output-format", "json", "flat.py", cwd=tmp_path)
    reasons = {module["mode"]: module["reason"] for module in
               parse_report(completed.stdout)["modules"] if module["mode"] != "fx"}
    assert set(reasons) == {"export", "compile"}
    for mode, reason in reasons.items():
        # torch's own words for the LayerNorm's error differ between releases.
        assert "; none fx-lsp tried runs: float32[2, 8, 16] from `norm` (LayerNorm), the first " \
            "layer whose input size is known, raised RuntimeError: " in reason, (mode, reason)
        assert reason.endswith(" at flat.py:11"), (mode, reason)
