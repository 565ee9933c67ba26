"""Example inputs for a ``forward`` that takes several tensors whose sizes
are related, searched jointly from how ``forward`` uses them
(``fxcore.worker.inputs.from_forward.related``,
``forward_relations``), and a dict of tensors ``forward`` only iterates
(``fxcore.worker.inputs.from_forward.container``): a decoder block whose skip connection has the
up-sampled
size of its input and the channels its ``cat`` leaves; two maps joined at the same size; a
spatial transformer's image and displacement field, one channel per spatial dimension (2d
and 3d, and one whose ``permute`` is computed, so that only the name ``ddf`` says it); a
block that adds a strided convolution of one map to a layer of the other (half its size); a
CRF-like block that joins its input with a ``meshgrid`` of coordinates; a cross-attention
whose context has the attention's ``kdim`` features; a decoder written like a library's, its
transposed convolution (stride 4) inside a wrapper module and its ``out`` set again at each step;
a lone velocity field (``dvf``) whose spatial rank is its channels' count; a
``dict[str, Tensor]`` iterated with ``.items()`` (whose fx verdict, a failure at the
iteration, is plain torch.fx's); a feature-pyramid stage's ``Sequence[Tensor]`` of halving maps.

On the branch's base none of these classes gets an export or compile verdict (FX103, no
example inputs).
"""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest
from library_verdicts import checked_against_real_torch
from torch import fx

from fx_lsp.cli.output_formats.json_report import parse_report

import cli_support

BLOCKS = '''"""Forwards that take several related tensors, or a dict of them."""
from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn


class Decoder(nn.Module):
    def __init__(self, in_channels: int = 16, skip_channels: int = 8, out_channels: int = 8):
        super().__init__()
        self.up = nn.ConvTranspose2d(in_channels, in_channels, 2, stride=2)
        self.conv = nn.Conv2d(in_channels + skip_channels, out_channels, 3, padding=1)

    def forward(self, inp, skip):
        x = self.up(inp)
        return self.conv(torch.cat([x, skip], dim=1))


class Warp(nn.Module):
    def forward(self, image, ddf):
        grid = ddf.permute(0, 2, 3, 1)
        return F.grid_sample(image, grid, align_corners=False)


class DictIn(nn.Module):
    def __init__(self, channels: int = 8):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 1)

    def forward(self, feats: dict[str, torch.Tensor]):
        return {k: self.conv(v) for k, v in feats.items()}


class CRF(nn.Module):
    def __init__(self, channels: int = 4):
        super().__init__()
        self.conv = nn.Conv2d(channels + 2, channels, 1)

    def forward(self, x):
        h, w = x.shape[2:]
        ys, xs = torch.meshgrid(torch.arange(h, dtype=x.dtype), torch.arange(w, dtype=x.dtype),
                                indexing="ij")
        grid = torch.stack([ys, xs]).expand(x.shape[0], 2, h, w)
        return self.conv(torch.cat([x, grid], 1))


class SameSizeJoin(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(16, 8, 3, padding=1)

    def forward(self, inp, skip):
        return self.conv(torch.cat([inp, skip], dim=1))


class Warp3d(nn.Module):
    def forward(self, image, ddf):
        return F.grid_sample(image, ddf.permute(0, 2, 3, 4, 1), align_corners=True)


class DownFuse(nn.Module):
    def __init__(self):
        super().__init__()
        self.down = nn.Conv2d(4, 8, 3, stride=2, padding=1)
        self.lateral = nn.Conv2d(6, 8, 1)

    def forward(self, high, low):
        return self.down(high) + self.lateral(low)


class GridWarp(nn.Module):
    """MONAI's Warp: the grid permuted by a computed order, so only the name says that the
    displacement field has one channel per spatial dimension."""

    def forward(self, image, ddf):
        spatial = ddf.shape[2:]
        axes = [torch.arange(size, dtype=ddf.dtype) for size in spatial]
        grid = ddf + torch.stack(torch.meshgrid(*axes, indexing="ij"), dim=0)
        grid = grid.permute([0] + list(range(2, 2 + len(spatial))) + [1])
        return F.grid_sample(image, grid, align_corners=True)


class CrossAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = nn.LayerNorm(16)
        self.attn = nn.MultiheadAttention(16, 2, kdim=32, vdim=32, batch_first=True)

    def forward(self, x, context):
        return self.attn(self.norm(x), context, context)[0]


class PyramidStage(nn.Module):
    def __init__(self, channels: Sequence[int] = (8, 16, 32), out_channels: int = 8):
        super().__init__()
        self.lateral = nn.ModuleList(nn.Conv2d(c, out_channels, 1) for c in channels)

    def forward(self, maps: Sequence[torch.Tensor]):
        laterals = [conv(level) for conv, level in zip(self.lateral, maps)]
        out = laterals[-1]
        for lateral in reversed(laterals[:-1]):
            out = lateral + F.interpolate(out, scale_factor=2.0)
        return out


class ConvWrap(nn.Sequential):
    """A library's own convolution block: the layer sits inside, its channels on the wrapper."""

    def __init__(self, in_channels: int = 16, out_channels: int = 8, transposed: bool = False):
        super().__init__()
        self.out_channels = out_channels
        self.add_module("conv", nn.ConvTranspose2d(in_channels, out_channels, 4, stride=4)
                        if transposed else nn.Conv2d(in_channels, out_channels, 3, padding=1))
        self.add_module("act", nn.ReLU())


class WrappedUp(nn.Module):
    """MONAI's UnetUpBlock: the transposed convolution inside a wrapper, and ``out`` set
    again at each step."""

    def __init__(self, in_channels: int = 16, out_channels: int = 8):
        super().__init__()
        self.transp_conv = ConvWrap(in_channels, out_channels, transposed=True)
        self.conv_block = nn.Sequential(ConvWrap(2 * out_channels, out_channels),
                                        ConvWrap(out_channels, out_channels))

    def forward(self, inp, skip):
        out = self.transp_conv(inp)
        out = torch.cat((out, skip), dim=1)
        out = self.conv_block(out)
        return out


class VelocityToDisplacement(nn.Module):
    """MONAI's DVF2DDF: one field, whose spatial rank is its own and its channels' count."""

    def __init__(self, num_steps: int = 3):
        super().__init__()
        self.num_steps = num_steps

    def forward(self, dvf):
        spatial = dvf.shape[2:]
        if dvf.shape[1] != len(spatial):
            raise ValueError("expecting one channel per spatial dimension")
        ddf = dvf / 2 ** self.num_steps
        for _ in range(self.num_steps):
            axes = [torch.arange(size, dtype=ddf.dtype) for size in spatial]
            grid = ddf + torch.stack(torch.meshgrid(*axes, indexing="ij"), dim=0)
            grid = grid.permute([0, *range(2, 2 + len(spatial)), 1])
            ddf = ddf + F.grid_sample(ddf, grid.flip(-1), align_corners=True)
        return ddf
'''

#: The inputs each class gets, in export and compile alike.
EXPECTED = {
    "Decoder": {"inp": "float32[2, 16, 32, 32]", "skip": "float32[2, 8, 64, 64]"},
    "SameSizeJoin": {"inp": "float32[2, 8, 32, 32]", "skip": "float32[2, 8, 32, 32]"},
    "Warp": {"image": "float32[2, 3, 32, 32]", "ddf": "float32[2, 2, 32, 32]"},
    "Warp3d": {"image": "float32[2, 3, 32, 32, 32]", "ddf": "float32[2, 3, 32, 32, 32]"},
    "DownFuse": {"high": "float32[2, 4, 32, 32]", "low": "float32[2, 6, 16, 16]"},
    "GridWarp": {"image": "float32[2, 3, 32, 32]", "ddf": "float32[2, 2, 32, 32]"},
    "CRF": {"x": "float32[2, 4, 32, 32]"},
    "CrossAttention": {"x": "float32[2, 8, 16]", "context": "float32[2, 8, 32]"},
    "DictIn": {"feats": "{'0': float32[2, 8, 32, 32], '1': float32[2, 8, 16, 16]}"},
    "ConvWrap": {"input": "float32[2, 16, 32, 32]"},
    "WrappedUp": {"inp": "float32[2, 16, 32, 32]", "skip": "float32[2, 8, 128, 128]"},
    "VelocityToDisplacement": {"dvf": "float32[2, 2, 32, 32]"},
    # A feature-pyramid stage's maps, halving (container.py before this change too).
    "PyramidStage": {
        "maps": "[float32[2, 8, 32, 32], float32[2, 16, 16, 16], float32[2, 32, 8, 8]]"},
}


@pytest.mark.slow
def test_related_tensors_and_an_iterated_dict_get_inputs_and_verdicts(tmp_path: Path) -> None:
    (tmp_path / "blocks.py").write_text(BLOCKS)
    completed = cli_support.fx_lsp("check", "--no-cache", "--mode", "fx,export,compile",
                                   "--output-format", "json", "blocks.py", cwd=tmp_path)
    report = parse_report(completed.stdout)
    found = {(module["class"], module["mode"]): module for module in report["modules"]}
    # The fx verdicts are plain torch.fx's: DictIn's ``feats.items()`` stops both.
    blocks = runpy.run_path(str(tmp_path / "blocks.py"))
    for name in EXPECTED:
        try:
            fx.symbolic_trace(blocks[name]())
            plain = "traceable"
        except Exception:  # what plain torch.fx raises is its failure
            plain = "failed"
        assert found[(name, "fx")]["status"] == plain, name
    items_line = BLOCKS.splitlines().index(
        "        return {k: self.conv(v) for k, v in feats.items()}") + 1
    assert ("FX003", items_line) in {(f["code"], f["line"])
                                     for f in found[("DictIn", "fx")]["failures"]}
    for name, tensors in EXPECTED.items():
        for mode in ("export", "compile"):
            module = found[(name, mode)]
            assert module["status"] == "traceable", (name, mode, module["reason"])
            assert module["inputs"]["from"] == "inferred"
            assert module["inputs"]["tensors"] == tensors, (name, mode)
    decoder = found[("Decoder", "export")]["inputs"]["note"]
    assert "skip float32[2, 8, 64, 64] with 8 channels, 2 times inp's spatial size" in decoder
    wrapped = found[("WrappedUp", "export")]["inputs"]["note"]
    assert "skip float32[2, 8, 128, 128] with 8 channels, 4 times inp's spatial size" in wrapped
    assert "a displacement field of rank 4" in found[("VelocityToDisplacement",
                                                      "export")]["inputs"]["note"]


@pytest.mark.slow  # real torch.export and torch.compile beside fx-lsp: about 20 s
def test_related_inputs_agree_with_real_torch(tmp_path: Path) -> None:
    (tmp_path / "blocks.py").write_text(BLOCKS)
    classes = checked_against_real_torch(tmp_path, ["blocks.py"])
    assert set(classes) == set(EXPECTED)
