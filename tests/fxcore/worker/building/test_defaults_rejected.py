"""Constructors as found on audio and segmentation libraries: a class whose own defaults
its constructor rejects, its message naming the argument to change ("please reduce the
n_bins", as nnAudio's CQT1992 says); a constructor that hands its arguments to a helper with
``*args`` (whose checks were lost with the whole search: ``init_checks`` raised on the tuple
``*args`` binds); and a base class whose forward reads an attribute only its subclasses set
(a segmentation library's base model and ``self.encoder``), skipped as a base, not "does not
fit".

On the branch's base: ``Spectral`` and ``Helped`` fail to build (FX101); ``Base`` does not fit
(FX105) rather than being skipped.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest
from library_verdicts import checked_against_real_torch

from fxcore.worker.building.init_checks import message_rules, named_in_message

from cli_support import fx_lsp

BLOCKS = '''"""Classes whose first guesses their own code rejects."""
import math

import torch
from torch import nn


def _top_bin(low, bins, per_octave):
    return low * 2 ** ((bins - 1) / per_octave)


class Spectral(nn.Module):
    def __init__(self, sr=22050, fmin=220, n_bins=84, bins_per_octave=12):
        super().__init__()
        top = _top_bin(fmin, n_bins, bins_per_octave)
        if top > sr / 2:
            raise ValueError(f"The top bin {top}Hz has exceeded the Nyquist frequency, "
                             "please reduce the n_bins")
        self.project = nn.Linear(n_bins, 8)

    def forward(self, x):
        return self.project(x)


def _window(kind, *sizes):
    return torch.ones(math.prod(sizes)) if kind == "box" else torch.zeros(math.prod(sizes))


class Helped(nn.Module):
    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        if in_channels != out_channels:
            raise ValueError("expecting in_channels == out_channels")
        self.register_buffer("window", _window("box", in_channels, 1))
        self.conv = nn.Conv1d(in_channels, out_channels, 1)

    def forward(self, x):
        return self.conv(x) + x


class Base(nn.Module):
    frozen = False

    def forward(self, x):
        if self.frozen and getattr(self, "name", None) == "encoder":
            return x
        return self.head(self.encoder(x))


class Built(Base):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Conv2d(3, 8, 3)
        self.head = nn.Conv2d(8, 2, 1)
'''


def test_a_rejection_that_names_an_argument_to_reduce_is_a_rule() -> None:
    message = "The top bin 26579.5Hz has exceeded the Nyquist frequency, please reduce the n_bins"
    assert named_in_message(message, {"sr": 22050, "n_bins": 84, "window": "hann"}) == {
        "n_bins": 84}
    assert [ast.unparse(rule) for rule in message_rules(message, {"n_bins": 84})] == [
        "n_bins < 84"]
    assert message_rules("please increase `sr`", {"sr": 8000}) != []


def test_rejected_defaults_helpers_and_bases(tmp_path: Path) -> None:
    (tmp_path / "blocks.py").write_text(BLOCKS)
    completed = fx_lsp("check", "--no-cache", "--mode", "fx,export,compile", "--output-format",
                       "json", "blocks.py", cwd=tmp_path)
    modules = {(m["class"], m["mode"]): m for m in json.loads(completed.stdout)["modules"]}
    for mode in ("fx", "export", "compile"):
        for name in ("Spectral", "Helped", "Built"):
            assert modules[name, mode]["status"] == "traceable", (name, mode, modules[name, mode])
        base = modules["Base", mode]
        assert base["status"] == "not-traced" and base["reason"].startswith(
            "Skipped: a base class: its forward reads self.head, which no code of Base"), base
    spectral = modules["Spectral", "export"]["arguments"]
    assert spectral["kwargs"] == {"n_bins": "64"}, spectral
    assert modules["Helped", "export"]["arguments"]["kwargs"] == {
        "in_channels": "16", "out_channels": "16"}


@pytest.mark.slow  # real torch.export and torch.compile of each class, on the CPU
def test_the_instances_found_get_real_torchs_verdicts(tmp_path: Path) -> None:
    source = BLOCKS[:BLOCKS.index("class Base(")]
    (tmp_path / "blocks.py").write_text(source)
    checked_against_real_torch(tmp_path, ["blocks.py"])
