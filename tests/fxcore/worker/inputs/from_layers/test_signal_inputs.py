"""Example inputs for a module that takes a long waveform
(``fxcore.worker.inputs.from_layers.waveform``): an STFT-like front end whose reflect pad is half
its ``n_fft`` of 512, a convolution with a 1024-tap kernel, and a block that unpacks ``batch,
channels, time`` before a two-channel ``Conv1d`` with a 1024-tap kernel. Neither their first
layers' sizes (at most 512 samples) nor the plain shapes fit them.

On the branch's base none of these classes gets an export or compile verdict (FX103 no
example inputs, or the inferred ones do not fit).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from library_verdicts import checked_against_real_torch

from fx_lsp.cli.output_formats.json_report import parse_report

import cli_support

BLOCKS = '''
"""Audio front ends whose input is a long waveform."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class STFTLike(nn.Module):
    def __init__(self, n_fft: int = 512, hop_length: int = 128):
        super().__init__()
        self.n_fft = n_fft
        self.hop_length = hop_length
        bins = n_fft // 2 + 1
        self.register_buffer("wsin", torch.ones(bins, 1, n_fft))

    def forward(self, x):
        x = x[:, None, :]
        x = F.pad(x, (self.n_fft // 2, self.n_fft // 2), mode="reflect")
        return F.conv1d(x, self.wsin, stride=self.hop_length)


class LongKernel(nn.Module):
    def __init__(self, taps: int = 1024):
        super().__init__()
        self.conv = nn.Conv1d(1, 4, taps, stride=256)

    def forward(self, x):
        return self.conv(x).relu()


class MultiChannel(nn.Module):
    def __init__(self, channels: int = 2, window: int = 1024):
        super().__init__()
        self.conv = nn.Conv1d(channels, 8, window, stride=256)

    def forward(self, x):
        b, c, t = x.shape
        return self.conv(x).reshape(b, -1)
'''

#: The inputs each class gets, in export and compile alike: four times the length it declares.
EXPECTED = {
    "STFTLike": {"x": "float32[2, 2048]"},
    "LongKernel": {"x": "float32[2, 1, 4096]"},
    "MultiChannel": {"x": "float32[2, 2, 4096]"},
}


def test_waveform_front_ends_get_long_enough_inputs_and_verdicts(tmp_path: Path) -> None:
    (tmp_path / "blocks.py").write_text(BLOCKS)
    completed = cli_support.fx_lsp("check", "--no-cache", "--mode", "export,compile",
                                   "--output-format", "json", "blocks.py", cwd=tmp_path)
    report = parse_report(completed.stdout)
    found = {(module["class"], module["mode"]): module for module in report["modules"]}
    for name, tensors in EXPECTED.items():
        for mode in ("export", "compile"):
            module = found[(name, mode)]
            assert module["status"] == "traceable", (name, mode, module["reason"])
            assert module["inputs"]["from"] == "inferred"
            assert module["inputs"]["tensors"] == tensors, (name, mode)
    assert "4 times the n_fft 512 of the class" in found[("STFTLike", "export")]["inputs"]["note"]
    # The unpacked ``b, c, t`` keeps only rank 3; the first Conv1d tells the channels.
    assert "2 channels, as its first Conv1d takes" in \
        found[("MultiChannel", "compile")]["inputs"]["note"]


@pytest.mark.slow  # real torch.export and torch.compile beside fx-lsp
def test_waveform_inputs_agree_with_real_torch(tmp_path: Path) -> None:
    (tmp_path / "blocks.py").write_text(BLOCKS)
    classes = checked_against_real_torch(tmp_path, ["blocks.py"])
    assert set(classes) == set(EXPECTED)
