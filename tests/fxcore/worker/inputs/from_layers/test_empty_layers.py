"""A block that divides a guessed channel count (``in_channels // reduction``, a squeeze-and-
excitation block) built with ``in_channels=3`` holds a convolution of no output channel:
torch.fx traces it and meta runs it, but torch refuses it on the CPU, so torch.export and
torch.compile had no verdict ("the instance does not fit", FX406, FX504) where segmentation-
models-pytorch's ``SCSEModule`` has one on any real channel count. An instance
with a weight of no element is now traced only until another instance fits: a lone channel
argument under 16 is tried at 32 and 64 (``argument_search.consistent_sets``), and the
verdicts are on the first that holds no empty weight."""

from __future__ import annotations

from pathlib import Path

import pytest
from library_verdicts import checked_against_real_torch

from fx_lsp.cli.output_formats.json_report import parse_report
from fxcore.worker.building.argument_search import consistent_sets

import cli_support

SQUEEZE = '''
import torch
from torch import nn


class Squeeze(nn.Module):
    def __init__(self, in_channels, reduction=16):
        super().__init__()
        self.gate = nn.Sequential(
            nn.AdaptiveAvgPool2d(1),
            nn.Conv2d(in_channels, in_channels // reduction, 1),
            nn.ReLU(inplace=True),
            nn.Conv2d(in_channels // reduction, in_channels, 1),
            nn.Sigmoid(),
        )
        self.spatial = nn.Sequential(nn.Conv2d(in_channels, 1, 1), nn.Sigmoid())

    def forward(self, x):
        return x * self.gate(x) + x * self.spatial(x)


class Plain(nn.Module):
    def __init__(self, in_channels):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, 8, 3)

    def forward(self, x):
        return self.conv(x)
'''


def test_a_lone_small_channel_count_is_tried_at_32_and_64() -> None:
    assert consistent_sets({"in_channels": 3, "reduction": 16}) == [
        {"in_channels": 32, "reduction": 16}, {"in_channels": 64, "reduction": 16}]
    # One that a reduction keeps, and a lone width, are left as they are.
    assert consistent_sets({"in_channels": 64}) == []
    assert consistent_sets({"dim": 8}) == []


def test_an_instance_with_an_empty_layer_gives_way_to_one_that_fits(tmp_path: Path) -> None:
    (tmp_path / "blocks.py").write_text(SQUEEZE)
    completed = cli_support.fx_lsp("check", "--no-cache", "--mode", "fx,export,compile",
                                   "--output-format", "json", "blocks.py", cwd=tmp_path)
    assert completed.returncode in (0, 1), completed.stderr
    modules = {(m["class"], m["mode"]): m for m in parse_report(completed.stdout)["modules"]}
    for mode in ("fx", "export", "compile"):
        squeeze = modules["Squeeze", mode]
        assert squeeze["status"] == "traceable", squeeze["reason"]
        assert squeeze["arguments"]["kwargs"] == {"in_channels": "32"}
        # A class whose first guess holds no empty weight keeps it.
        assert modules["Plain", mode]["arguments"]["kwargs"] == {"in_channels": "3"}
    assert any("Squeeze(in_channels=3): a layer without weights" in note
               for note in modules["Squeeze", "fx"]["capture_notes"])


@pytest.mark.slow
def test_the_instance_kept_gets_real_torchs_verdicts(tmp_path: Path) -> None:
    (tmp_path / "blocks.py").write_text(SQUEEZE)
    classes = checked_against_real_torch(tmp_path, ["blocks.py"])
    assert classes["Squeeze"]["export"]["arguments"]["kwargs"] == {"in_channels": "32"}
