"""Inputs laid out as ``forward``'s code makes them for their layer
(``fxcore.worker.inputs.from_forward.layouts``): a series ``[batch, length, features]`` transposed
before
its ``Conv1d``, which the convolution's own layout never fits; a video block whose first layer
is a ``GroupNorm`` (which takes images) before its ``Conv3d``, given clips, not images. Each
verdict compared with real torch.export (non-strict) and torch.compile on the CPU on real
tensors of the inputs found, in the same run (``library_verdicts.checked_against_real_torch``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from library_verdicts import checked_against_real_torch

BLOCKS = '''import torch.nn.functional as F
from torch import nn


class TemporalConv(nn.Module):
    def __init__(self, features: int = 6, hidden: int = 8):
        super().__init__()
        self.conv = nn.Conv1d(features, hidden, 3, padding=1)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x):
        x = x.transpose(1, 2)
        return self.out(F.relu(self.conv(x)).transpose(1, 2))


class VideoTimeBlock(nn.Module):
    def __init__(self, channels: int = 8, embedding: int = 12, groups: int = 4):
        super().__init__()
        self.norm_in = nn.GroupNorm(groups, channels)
        self.time_proj = nn.Linear(embedding, channels)
        self.gate = nn.Linear(channels, channels)
        self.norm_mid = nn.GroupNorm(groups, channels * 2)
        self.conv = nn.Conv3d(channels, channels, (3, 1, 1), padding=(1, 0, 0))

    def forward(self, hidden, emb=None):
        out = self.conv(F.silu(self.norm_in(hidden)))
        if emb is not None:
            out = out + self.time_proj(emb)[:, :, None, None, None]
        return hidden + out
'''


@pytest.mark.slow
def test_inputs_are_laid_out_as_forward_makes_them_for_their_layers(tmp_path: Path) -> None:
    (tmp_path / "blocks.py").write_text(BLOCKS)
    classes = checked_against_real_torch(tmp_path, ["blocks.py"])
    inputs = {name: by_mode["export"]["inputs"] for name, by_mode in classes.items()}
    assert all(by_mode["compile"]["inputs"] == inputs[name]
               for name, by_mode in classes.items())
    assert inputs["TemporalConv"]["tensors"] == {"x": "float32[2, 32, 6]"}
    assert "permutes and transposes undone" in inputs["TemporalConv"]["note"]
    assert inputs["VideoTimeBlock"]["tensors"] == {"hidden": "float32[2, 8, 32, 32, 32]"}
    assert "with a depth for its 3-d layers" in inputs["VideoTimeBlock"]["note"]
