"""Example inputs whose sizes ``forward``'s own operations fix, solved over symbolic sizes
(``fxcore.worker.inputs.from_forward.symbolic_sizes``), for the classes the fixed-shape guesses find
none for: an up block that joins the skips of a tuple and an optional timestep embedding into its
convolutions; a block whose embedding's width is the linear layer it feeds, split into a
scale and a shift for a 1-d map; a forecasting head that divides by a buffer of one scale per
series and joins exogenous features before its linear layer, with a keyword-only optional
mask; a rotary block that splits its last dimension into pairs to meet a table built in
``__init__``. Each is checked by the real worker (``fx-lsp check``) and its export and
compile verdicts compared with real torch.export and torch.compile on the CPU, on real
tensors of the inputs found, in the same test.

On the branch's base none of these classes gets example inputs (FX103).
"""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
from library_verdicts import checked_against_real_torch

from fxcore.model.container_spec import parse_input

HEADER = '''"""Blocks whose inputs' sizes their operations fix."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
'''

UP_BLOCK = '''

class SkipUpBlock(nn.Module):
    def __init__(self, in_channels: int = 16, prev_channels: int = 32, out_channels: int = 24,
                 temb_channels: int = 40):
        super().__init__()
        self.conv0 = nn.Conv2d(prev_channels + out_channels, out_channels, 3, padding=1)
        self.conv1 = nn.Conv2d(out_channels + in_channels, out_channels, 3, padding=1)
        self.time = nn.Linear(temb_channels, out_channels)

    def forward(self, hidden_states, res_hidden_states_tuple, temb=None):
        res = res_hidden_states_tuple[-1]
        hidden_states = self.conv0(torch.cat([hidden_states, res], dim=1))
        if temb is not None:
            hidden_states = hidden_states + self.time(temb)[:, :, None, None]
        res = res_hidden_states_tuple[-2]
        hidden_states = self.conv1(torch.cat([hidden_states, res], dim=1))
        return F.interpolate(hidden_states, scale_factor=2.0, mode="nearest")
'''

SCALE_SHIFT = '''

class ScaleShiftBlock(nn.Module):
    def __init__(self, channels: int = 24, emb_channels: int = 20):
        super().__init__()
        self.norm = nn.GroupNorm(4, channels)
        self.emb = nn.Sequential(nn.SiLU(), nn.Linear(emb_channels, 2 * channels))
        self.out = nn.Conv1d(channels, channels, 3, padding=1)

    def forward(self, x, emb):
        scale, shift = self.emb(emb).chunk(2, dim=1)
        h = self.norm(x) * (1 + scale[:, :, None]) + shift[:, :, None]
        return self.out(h)
'''

FORECAST = '''

class ForecastHead(nn.Module):
    def __init__(self, n_series: int = 7, input_size: int = 36, horizon: int = 12,
                 n_exog: int = 5):
        super().__init__()
        self.register_buffer("scale", torch.ones(n_series, 1))
        self.mlp = nn.Linear(input_size + n_exog, horizon)

    def forward(self, insample_y, futr_exog, *, mask=None):
        y = insample_y / self.scale
        if mask is not None:
            y = y * mask
        return self.mlp(torch.cat([y, futr_exog], dim=-1))
'''

ROTARY = '''

class RotaryTable(nn.Module):
    def __init__(self, dim: int = 24, max_len: int = 64):
        super().__init__()
        angles = torch.arange(max_len)[:, None] / (10000 ** (torch.arange(dim // 2) / dim))
        self.register_buffer("table", torch.stack([angles.cos(), angles.sin()], -1))

    def forward(self, x):
        b, t, _ = x.shape
        pairs = x.view(b, t, -1, 2)
        table = self.table[:t]
        real = pairs[..., 0] * table[..., 0] - pairs[..., 1] * table[..., 1]
        imag = pairs[..., 0] * table[..., 1] + pairs[..., 1] * table[..., 0]
        return torch.stack([real, imag], -1).flatten(-2)
'''


def _channels(spelled: str) -> list[int]:
    """The second size of each tensor of a spelled input (a tuple's too)."""
    spec = parse_input(spelled)
    leaves = getattr(spec, "leaves", [spec])
    return [leaf.shape[1] for leaf in leaves]


def _checked(tmp_path: Path, source: str, name: str) -> dict[str, str]:
    """The inputs fx-lsp found for ``name``, after its export and compile verdicts were
    compared with real torch on real tensors of them."""
    (tmp_path / "blocks.py").write_text(HEADER + source)
    classes = checked_against_real_torch(tmp_path, ["blocks.py"])
    assert set(classes) == {name}
    for mode in ("export", "compile"):
        inputs = classes[name][mode]["inputs"]
        assert inputs["from"] == "inferred", (mode, classes[name][mode]["reason"])
        assert "solved over symbolic sizes" in inputs["note"], inputs["note"]
    assert classes[name]["export"]["inputs"] == classes[name]["compile"]["inputs"]
    return classes[name]["export"]["inputs"]["tensors"]


@pytest.mark.slow
def test_an_up_block_gets_its_skips_and_optional_embedding_from_its_layers(
        tmp_path: Path) -> None:
    tensors = _checked(tmp_path, UP_BLOCK, "SkipUpBlock")
    # The optional embedding is given, as wide as the layer it feeds.
    assert _channels(tensors["temb"]) == [40]
    skips = _channels(tensors["res_hidden_states_tuple"])
    # conv0 takes the input and the last skip, conv1 its own 24 channels and the other one.
    assert _channels(tensors["hidden_states"])[0] + skips[-1] == 56
    assert skips[0] == 16


@pytest.mark.slow
def test_an_embedding_split_into_scale_and_shift_gets_the_width_its_layer_takes(
        tmp_path: Path) -> None:
    tensors = _checked(tmp_path, SCALE_SHIFT, "ScaleShiftBlock")
    assert parse_input(tensors["emb"]).shape[1] == 20
    x = parse_input(tensors["x"])
    assert len(x.shape) == 3 and x.shape[1] == 24


@pytest.mark.slow
def test_a_forecasting_head_with_a_keyword_only_mask_gets_every_argument(
        tmp_path: Path) -> None:
    tensors = _checked(tmp_path, FORECAST, "ForecastHead")
    assert set(tensors) == {"insample_y", "futr_exog", "mask"}
    history, exogenous = parse_input(tensors["insample_y"]), parse_input(tensors["futr_exog"])
    # One series per row of the buffer it is divided by; both widths fill the linear layer.
    assert history.shape[-2] == 7
    assert history.shape[-1] + exogenous.shape[-1] == 41


@pytest.mark.slow
def test_a_last_dimension_split_into_pairs_fits_the_table_built_in_init(
        tmp_path: Path) -> None:
    tensors = _checked(tmp_path, ROTARY, "RotaryTable")
    x = parse_input(tensors["x"])
    assert len(x.shape) == 3 and x.shape[-1] == 24 and x.shape[1] <= 64


def test_without_the_shape_environment_the_search_says_why_and_gives_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a torch whose private ``ShapeEnv`` lacks what the search uses, it is skipped with a
    stated reason rather than failing the class."""
    from fxcore.worker.inputs.from_forward import symbolic_sizes

    (tmp_path / "rotary.py").write_text(HEADER + ROTARY)
    rotary = runpy.run_path(str(tmp_path / "rotary.py"))["RotaryTable"]
    assert symbolic_sizes.unavailable() is None
    found = symbolic_sizes.symbolic_inputs(rotary, rotary(), "cpu", {}, 60.0)
    assert found is not None and parse_input(str(found.specs["x"])).shape[-1] == 24

    monkeypatch.setattr(symbolic_sizes, "ShapeEnv", type(
        "Older", (), {"create_unbacked_symint": None, "guard_or_defer_runtime_assert": None}))
    assert symbolic_sizes.unavailable() == ("torch's ShapeEnv lacks "
                                            "set_real_tensor_prop_unbacked_vals or "
                                            "set_unbacked_var_to_val")
    assert symbolic_sizes.symbolic_inputs(rotary, rotary(), "cpu", {}, 60.0) is None


def test_a_shape_environment_that_names_the_value_setter_as_torch_2_10_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """torch 2.10's ``ShapeEnv`` gives a size its value with ``set_unbacked_var_to_val``,
    which 2.11 renamed ``set_real_tensor_prop_unbacked_vals``: the search runs with either
    (on 2.10 it found nothing for a ``x.view(b, length, c)`` before)."""
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    from fxcore.worker.inputs.from_forward import symbolic_sizes

    setter = next(getattr(ShapeEnv, name) for name in symbolic_sizes.VALUE_SETTERS
                  if hasattr(ShapeEnv, name))

    def hidden(self: object) -> None:
        raise AttributeError("set_real_tensor_prop_unbacked_vals")

    older = type("Older", (ShapeEnv,), {
        "set_real_tensor_prop_unbacked_vals": property(hidden),
        "set_unbacked_var_to_val": setter})
    monkeypatch.setattr(symbolic_sizes, "ShapeEnv", older)
    assert symbolic_sizes.unavailable() is None
    (tmp_path / "rotary.py").write_text(HEADER + ROTARY)
    rotary = runpy.run_path(str(tmp_path / "rotary.py"))["RotaryTable"]
    found = symbolic_sizes.symbolic_inputs(rotary, rotary(), "cpu", {}, 60.0)
    assert found is not None and parse_input(str(found.specs["x"])).shape[-1] == 24
