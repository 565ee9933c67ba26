"""As found on an audio library: inputs of the shape ``forward`` documents
(``fxcore.worker.inputs.given.documented``), for transforms with no layer to tell their input's
size: an inverse transform whose docstring says ``(batch, n_fft//2+1, frames)`` (its required
``n_fft`` guessed as an FFT's length), one whose
``assert`` message says ``(batch, freq_bins, timesteps, 2)`` with a kernel of ``n_fft`` rows,
and one that runs on no input, whose refusal quotes the documented shape's error; each read
with the instance's own sizes, and the verdicts checked against real torch.

On the branch's base none of the first two gets an export or compile verdict (no example
inputs: the plain shapes tried fit neither), and the third's refusal names a plain shape.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from library_verdicts import checked_against_real_torch

from cli_support import fx_lsp

BLOCKS = '''"""Transforms whose input's shape only their documentation says."""
import torch
import torch.nn.functional as F
from torch import nn


class Inverse(nn.Module):
    def __init__(self, n_fft: int):
        super().__init__()
        self.n_fft = n_fft
        self.register_buffer("basis", torch.randn(n_fft // 2 + 1, n_fft))

    def forward(self, spec):
        """Frames from a spectrogram.

        Args:
            spec: magnitudes of the shape ``(batch, n_fft//2+1, frames)``.
        """
        return (spec.transpose(1, 2) @ self.basis).flatten(1)


class Complex(nn.Module):
    def __init__(self, n_fft: int = 32):
        super().__init__()
        self.n_fft = n_fft
        self.register_buffer("kernel", torch.randn(n_fft, 1, n_fft, 1))

    def forward(self, X):
        assert X.dim() == 4, ("Only for complex numbers: "
                              "make sure the tensor is in the shape of (batch, freq_bins, "
                              "timesteps, 2)")
        real = F.conv2d(X[:, :, :, 0].unsqueeze(1), self.kernel)
        return real.squeeze(-2)


class Outdated(nn.Module):
    def __init__(self, n_fft: int = 64):
        super().__init__()
        self.n_fft = n_fft

    def forward(self, spec):
        """spec: of the shape (batch, n_fft//2+1, frames)"""
        raise RuntimeError("this transform needs an older torch")
'''


@pytest.mark.slow
def test_documented_shapes_give_inputs_real_torch_agrees_with(tmp_path: Path) -> None:
    (tmp_path / "blocks.py").write_text(BLOCKS[:BLOCKS.index("class Outdated")])
    classes = checked_against_real_torch(tmp_path, ["blocks.py"])
    inverse = classes["Inverse"]["export"]["inputs"]
    # ``n_fft`` guessed as an FFT's length (512), not as a count (2).
    assert classes["Inverse"]["export"]["arguments"]["kwargs"] == {"n_fft": "512"}
    assert inverse["tensors"] == {"spec": "float32[2, 257, 16]"}, inverse
    assert "the shape Inverse.forward documents for spec" in inverse["note"]
    assert classes["Complex"]["compile"]["inputs"]["tensors"] == {
        "X": "float32[2, 32, 16, 2]"}


def test_a_model_that_raises_on_every_input_tried_gets_that_error_as_its_verdict(
        tmp_path: Path) -> None:
    (tmp_path / "blocks.py").write_text(BLOCKS)
    completed = fx_lsp("check", "--no-cache", "--mode", "export", "--output-format", "json",
                       "blocks.py", cwd=tmp_path)
    report = json.loads(completed.stdout)
    outdated = next(m for m in report["modules"] if m["class"] == "Outdated")
    # The same error on every input tried is the verdict, at the line that raises it.
    raising = BLOCKS.splitlines().index(
        '        raise RuntimeError("this transform needs an older torch")') + 1
    assert outdated["status"] == "failed"
    assert [(f["code"], f["line"]) for f in outdated["failures"]] == [("FX408", raising)]
    assert any(d["code"] == "FX408" and "forward raises on every input tried" in d["message"]
               and "RuntimeError: this transform needs an older torch" in d["message"]
               for d in report["diagnostics"])
