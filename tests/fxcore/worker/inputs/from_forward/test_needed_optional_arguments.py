"""Optional arguments ``forward`` needs (``fxcore.worker.inputs.from_forward.needed_optional``): an
argument whose default is None but which ``forward`` uses without an ``is None`` test gets a
tensor beside the required arguments a fixed-shape search decides, sized from its first use.
The classes: a resnet block over 64x64 latents whose time embedding goes through the
nonlinearity, then a linear layer, then is broadcast over the map; a token mixer whose token
count its docstring documents, with a conditioning vector; a transformer block whose
``encoder_hidden_states`` only its ``attn2`` takes, wider than the tokens; a convolution whose
optional scale is tested (it stays None); and a UNet-like parent over 64x64 latents that
always passes its time embedding and encoder states to a cross-attention middle block, which
is judged on what the parent passes. Each shape check stops the fx pre-trace's inputs, so the
fixed-shape searches decide them. fx-lsp's export and compile verdicts are compared with real
torch.export (non-strict) and torch.compile on the CPU on the inputs it found, and on inputs
written by hand; its fx verdict with plain ``torch.fx.symbolic_trace``.

On the branch's base the token mixer, the transformer block and the parent got inputs that do
not fit (FX406, FX504), and the middle block was judged on its own guessed inputs.
"""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest
import torch
from library_verdicts import checked_against_real_torch
from real_torch_answers import export_errors

from fxcore.model.container_spec import parse_input
from fxcore.worker.inputs.from_forward.needed_optional import needed_optional

from cli_support import fx_lsp

# Three modes over the corpus, each checked against real torch: minutes of CPU, the slow
# tier's (the fast tier keeps within its five minutes on two cores).
pytestmark = pytest.mark.slow

BLOCKS = '''"""Blocks with optional arguments their forward needs."""
import torch
import torch.nn.functional as F
from torch import nn


class LatentTimeBlock(nn.Module):
    """A resnet block over 64x64 latents: its time embedding goes through the nonlinearity,
    then a linear layer, then is broadcast over the map."""

    def __init__(self, channels=32, temb_channels=64):
        super().__init__()
        self.norm1 = nn.GroupNorm(8, channels)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.nonlinearity = nn.SiLU()
        self.time_emb_proj = nn.Linear(temb_channels, channels)

    def forward(self, input_tensor, temb=None):
        if input_tensor.shape[-1] != 64:
            raise ValueError("64x64 latents only")
        hidden = self.conv1(self.nonlinearity(self.norm1(input_tensor)))
        temb = self.nonlinearity(temb)
        temb = self.time_emb_proj(temb)[:, :, None, None]
        return input_tensor + hidden + temb


class TokenMixer(nn.Module):
    def __init__(self):
        super().__init__()
        self.mix = nn.Linear(20, 20)
        self.cond_proj = nn.Linear(12, 20)

    def forward(self, x, cond=None):
        """Mix the tokens.

        Args:
            x: tokens of shape (batch, 24, 20)
        """
        if x.shape[1] != 24:
            raise ValueError("24 tokens")
        return self.mix(x) + self.cond_proj(cond)[:, None, :]


class Attention(nn.Module):
    def __init__(self, dim, context_dim=None, heads=2):
        super().__init__()
        context_dim = context_dim or dim
        self.heads = heads
        self.to_q = nn.Linear(dim, dim)
        self.to_k = nn.Linear(context_dim, dim)
        self.to_v = nn.Linear(context_dim, dim)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x, context=None):
        context = x if context is None else context
        q, k, v = self.to_q(x), self.to_k(context), self.to_v(context)
        b, n, d = q.shape
        q, k, v = (t.reshape(b, -1, self.heads, d // self.heads).transpose(1, 2)
                   for t in (q, k, v))
        out = F.scaled_dot_product_attention(q, k, v)
        return self.to_out(out.transpose(1, 2).reshape(b, n, d))


class CrossTransformerBlock(nn.Module):
    """Cross-attention only under attn2, whose context is wider than the tokens."""

    def __init__(self, dim=32, context_dim=48):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn1 = Attention(dim)
        self.norm2 = nn.LayerNorm(dim)
        self.attn2 = Attention(dim, context_dim)

    def forward(self, hidden_states, encoder_hidden_states=None):
        if hidden_states.shape[1] != 16:
            raise ValueError("16 tokens")
        hidden_states = self.attn1(self.norm1(hidden_states)) + hidden_states
        return self.attn2(self.norm2(hidden_states), encoder_hidden_states) + hidden_states


class MaskedConv(nn.Module):
    """cond is tested: the block runs with it and without it."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3)
        self.scale = nn.Linear(10, 8)

    def forward(self, x, cond=None):
        if x.shape[-1] != 64:
            raise ValueError("64x64 images only")
        h = self.conv(x)
        if cond is not None:
            h = h * self.scale(cond)[:, :, None, None]
        return h


class ResBlock(nn.Module):
    def __init__(self, channels, temb_channels):
        super().__init__()
        self.norm1 = nn.GroupNorm(8, channels)
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1)
        self.time_emb_proj = nn.Linear(temb_channels, channels)

    def forward(self, x, temb=None):
        h = self.conv1(F.silu(self.norm1(x)))
        return x + h + self.time_emb_proj(F.silu(temb))[:, :, None, None]


class CrossMidBlock(nn.Module):
    def __init__(self, channels, temb_channels, context_dim):
        super().__init__()
        self.resnet = ResBlock(channels, temb_channels)
        self.norm = nn.GroupNorm(8, channels)
        self.attn = Attention(channels, context_dim)

    def forward(self, hidden_states, temb=None, encoder_hidden_states=None):
        hidden_states = self.resnet(hidden_states, temb)
        b, c, hh, ww = hidden_states.shape
        h = self.norm(hidden_states).flatten(2).transpose(1, 2)
        h = self.attn(h, encoder_hidden_states)
        return hidden_states + h.transpose(1, 2).reshape(b, c, hh, ww)


class LatentUNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv_in = nn.Conv2d(4, 32, 3, padding=1)
        self.time_embedding = nn.Sequential(nn.Linear(32, 64), nn.SiLU(), nn.Linear(64, 64))
        self.mid_block = CrossMidBlock(32, 64, 48)
        self.conv_out = nn.Conv2d(32, 4, 3, padding=1)

    def forward(self, sample, timestep_emb=None, encoder_hidden_states=None):
        if sample.shape[-1] != 64:
            raise ValueError("64x64 latents only")
        emb = self.time_embedding(timestep_emb)
        h = self.conv_in(sample)
        h = self.mid_block(h, emb, encoder_hidden_states=encoder_hidden_states)
        return self.conv_out(h)
'''

#: Inputs written by hand (a batch of 1, other sequence lengths), on which real torch gives
#: the verdicts fx-lsp gives on its own.
BY_HAND = {
    "LatentTimeBlock": {"input_tensor": "float32[1, 32, 64, 64]", "temb": "float32[1, 64]"},
    "TokenMixer": {"x": "float32[3, 24, 20]", "cond": "float32[3, 12]"},
    "CrossTransformerBlock": {"hidden_states": "float32[1, 16, 32]",
                              "encoder_hidden_states": "float32[1, 77, 48]"},
    "MaskedConv": {"x": "float32[1, 3, 64, 64]"},
    "LatentUNet": {"sample": "float32[1, 4, 64, 64]", "timestep_emb": "float32[1, 32]",
                   "encoder_hidden_states": "float32[1, 5, 48]"},
}


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, dict]]:
    root = tmp_path_factory.mktemp("needed")
    (root / "blocks.py").write_text(BLOCKS)
    return root, checked_against_real_torch(root, ["blocks.py"])


def _inputs(classes: dict[str, dict], name: str) -> dict:
    export, compile_ = classes[name]["export"], classes[name]["compile"]
    assert export["status"] == compile_["status"] == "traceable", (export["reason"],
                                                                   compile_["reason"])
    assert export["inputs"] == compile_["inputs"]
    return export["inputs"]


def _shape(spelled: str) -> tuple[int, ...]:
    return parse_input(spelled).shape  # type: ignore[union-attr]


def test_a_time_embedding_through_the_nonlinearity_gets_the_width_of_its_linear_layer(
        checked: tuple[Path, dict[str, dict]]) -> None:
    inputs = _inputs(checked[1], "LatentTimeBlock")
    assert inputs["from"] == "inferred"
    assert inputs["tensors"] == {"input_tensor": "float32[2, 32, 64, 64]",
                                 "temb": "float32[2, 64]"}
    assert "sized from its use by `time_emb_proj` (Linear)" in inputs["note"]


def test_a_documented_shape_gets_the_conditioning_its_forward_needs(
        checked: tuple[Path, dict[str, dict]]) -> None:
    inputs = _inputs(checked[1], "TokenMixer")
    assert inputs["tensors"] == {"x": "float32[2, 24, 20]", "cond": "float32[2, 12]"}
    assert "the shape TokenMixer.forward documents" in inputs["note"]


def test_encoder_states_only_cross_attention_takes_are_sized_from_its_keys(
        checked: tuple[Path, dict[str, dict]]) -> None:
    inputs = _inputs(checked[1], "CrossTransformerBlock")
    assert _shape(inputs["tensors"]["hidden_states"]) == (2, 16, 32)
    states = _shape(inputs["tensors"]["encoder_hidden_states"])
    assert len(states) == 3 and states[0] == 2 and states[-1] == 48
    assert "`attn2.to_k` (Linear)" in inputs["note"]


def test_a_tested_optional_argument_stays_none(checked: tuple[Path, dict[str, dict]]) -> None:
    root, classes = checked
    assert _inputs(classes, "MaskedConv")["tensors"] == {"x": "float32[2, 3, 64, 64]"}
    masked = runpy.run_path(str(root / "blocks.py"))["MaskedConv"]
    assert needed_optional(masked, masked(), {}) == {}
    # Both ways run: without it and with it.
    model = masked()
    assert model(torch.zeros(2, 3, 64, 64)).shape == (2, 8, 62, 62)
    assert model(torch.zeros(2, 3, 64, 64), torch.zeros(2, 10)).shape == (2, 8, 62, 62)


def test_a_middle_block_is_judged_on_both_tensors_its_parent_passes(
        checked: tuple[Path, dict[str, dict]]) -> None:
    classes = checked[1]
    parent = _inputs(classes, "LatentUNet")
    assert _shape(parent["tensors"]["sample"]) == (2, 4, 64, 64)
    assert _shape(parent["tensors"]["timestep_emb"]) == (2, 32)
    assert _shape(parent["tensors"]["encoder_hidden_states"])[-1] == 48
    for mode in ("export", "compile"):
        module = classes["CrossMidBlock"][mode]
        assert module["arguments"]["from"] == "parent"
        assert module["arguments"]["parent"].endswith("blocks:LatentUNet")
        assert module["judged_on"]["inputs"] == "code", module["judged_on"]
    block = _inputs(classes, "CrossMidBlock")
    assert block["from"] == "parent"
    assert block["tensors"]["hidden_states"] == "float32[2, 32, 64, 64]"
    assert block["tensors"]["temb"] == "float32[2, 64]"
    assert block["tensors"]["encoder_hidden_states"] == parent["tensors"][
        "encoder_hidden_states"]


def test_real_torch_gives_the_same_verdicts_on_inputs_written_by_hand(
        checked: tuple[Path, dict[str, dict]]) -> None:
    root, classes = checked
    errors = export_errors(root / "blocks.py", BY_HAND)
    assert {name: error["non-strict"] for name, error in errors.items()} == dict.fromkeys(
        BY_HAND)
    namespace = runpy.run_path(str(root / "blocks.py"))
    for name, specs in BY_HAND.items():
        assert classes[name]["compile"]["status"] == "traceable"
        torch._dynamo.reset()
        tensors = {arg: torch.randn(_shape(spec)) for arg, spec in specs.items()}
        compiled = torch.compile(namespace[name](), fullgraph=True, backend="eager")
        eager = namespace[name]()(**tensors)
        assert compiled(**tensors).shape == eager.shape


def test_the_fx_verdicts_are_plain_symbolic_traces(checked: tuple[Path, dict[str, dict]]
                                                   ) -> None:
    root = checked[0]
    completed = fx_lsp("check", "--no-cache", "--mode", "fx", "--output-format", "json",
                       "blocks.py", cwd=root)
    report = json.loads(completed.stdout)
    namespace = runpy.run_path(str(root / "blocks.py"))
    built = [module for module in report["modules"] if module["arguments"]["from"] == "defaults"]
    assert {module["class"] for module in built} >= set(BY_HAND)
    for module in built:
        try:
            torch.fx.symbolic_trace(namespace[module["class"]]())
            plain = "traceable"
        except Exception:  # plain torch.fx's own answer
            plain = "failed"
        assert module["status"] == plain, (module["class"], module["reason"])
