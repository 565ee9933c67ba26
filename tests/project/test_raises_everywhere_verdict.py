"""A class whose ``forward`` raises the same error on every input fx-lsp tries gets that
error as its export and compile verdict (FX408, FX509) at its line, instead of "no example
inputs"; the library benchmark judges it apart (``benchmarks/fidelity/verdicts_apart.py``):
it agrees only where real torch, on the CPU, on the instance rebuilt from the report's
arguments and the first input tried, raises the same error at the same line. Compared here
with real torch in the same run, on small classes written for it."""

from __future__ import annotations

import ast
import json
import sys
import textwrap
import traceback
from pathlib import Path

import pytest
import torch

from fxcore.model.tensor_spec import parse_spec

from cli_support import fx_lsp
from engine_support import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT))
from benchmarks.fidelity.library_judging import Figures, absolute_paths, has_verdict, judge
from benchmarks.fidelity.no_verdict_causes import diagnostic_messages
from benchmarks.fidelity.pt2_real_check import real_outcomes

WORKSPACE = '''
import math

import torch
from torch import nn


class Inverse(nn.Module):
    """torch.istft refuses a real tensor whatever its shape."""

    def __init__(self, n_fft: int = 16):
        super().__init__()
        self.n_fft = n_fft
        self.register_buffer("window", torch.hann_window(n_fft))

    def forward(self, spec):
        return torch.istft(spec, self.n_fft, window=self.window)


class Missing(nn.Module):
    """Calls a function the installed math module lacks."""

    def __init__(self, dim: int = 8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        scale = math.blackmanharris(4)
        return self.proj(x) * scale


class Runs(nn.Module):
    def __init__(self, dim: int = 8):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x)


class CheckedFirst(nn.Module):
    """Refuses inputs of another rank itself, then meets what torch refuses on the others."""

    def __init__(self, n_fft: int = 16):
        super().__init__()
        self.n_fft = n_fft

    def forward(self, spec):
        assert spec.dim() == 3, "give (batch, bins, frames)"
        return torch.istft(spec, self.n_fft)
'''

#: The line of each class's error: torch.istft's call, the missing function's; the class's
#: own assert on the input's rank is no verdict, the error on the inputs it lets through is.
RAISING = {"Inverse": 16, "Missing": 27, "CheckedFirst": 49}


def test_the_verdict_is_at_the_line_where_real_torch_raises_the_same(tmp_path: Path) -> None:
    (tmp_path / "spectral_fast.py").write_text(textwrap.dedent(WORKSPACE).lstrip())
    completed = fx_lsp("check", "--no-cache", "--mode", "export", "--output-format", "json",
                       "spectral_fast.py", cwd=tmp_path)
    modules = {module["class"]: module for module in json.loads(completed.stdout)["modules"]}
    assert modules["Runs"]["status"] == "traceable"
    sys.path.insert(0, str(tmp_path))
    try:
        import spectral_fast
    finally:
        sys.path.remove(str(tmp_path))
    for name, line in RAISING.items():
        module = modules[name]
        assert [(f["code"], f["line"]) for f in module["failures"]] == [("FX408", line)]
        # Real torch on the CPU: the class built as the report says, the first input tried.
        model = getattr(spectral_fast, name)(**{
            key: ast.literal_eval(value)
            for key, value in module["arguments"]["kwargs"].items()})
        tensors = {key: torch.ones(parse_spec(spec).shape)
                   for key, spec in module["inputs"]["tensors"].items()}
        with pytest.raises(Exception) as raised:
            model(**tensors)
        lines = [frame.lineno for frame in traceback.extract_tb(raised.tb)
                 if frame.filename == spectral_fast.__file__]
        assert lines[-1] == line


@pytest.mark.slow  # real torch.export and torch.compile beside fx-lsp's two modes: ~40 s
def test_the_benchmark_judges_it_apart_against_real_torch(tmp_path: Path) -> None:
    (tmp_path / "spectral.py").write_text(textwrap.dedent(WORKSPACE).lstrip())
    completed = fx_lsp("check", "--no-cache", "--mode", "export,compile", "--output-format",
                       "json", "spectral.py", cwd=tmp_path)
    report = json.loads(completed.stdout)
    classes: dict[str, dict[str, dict]] = {}
    for module in report["modules"]:
        classes.setdefault(module["class"], {})[module["mode"]] = {
            **absolute_paths(module, str(tmp_path)), "relative_path": module["path"]}
    for name, line in RAISING.items():
        for mode, code in (("export", "FX408"), ("compile", "FX509")):
            module = classes[name][mode]
            assert has_verdict(module), module
            assert [(f["code"], f["line"]) for f in module["failures"]] == [(code, line)]
            assert module["inputs"]["tensors"], module
    messages = diagnostic_messages(report)
    assert any("forward raises on every input tried" in text and "istft" in text
               for text in messages[("export", "spectral.py", "Inverse")])
    names = sorted(classes)
    real = real_outcomes(str(tmp_path), [{"module": classes[name]["export"],
                                          "compile": classes[name]["compile"],
                                          "inputs": classes[name]["export"]["inputs"]["tensors"]}
                                         for name in names])
    figures = Figures("raises")
    for name, outcome in zip(names, real, strict=True):
        judge(figures, f"spectral:{name}", classes[name], outcome, {
            mode: messages.get((mode, "spectral.py", name), []) for mode in classes[name]})
    assert figures.disagreements == []
    assert figures.raised.reported == figures.raised.agree == {"export": 3, "compile": 3}
    assert figures.agree == figures.tried == {"fx": 0, "export": 4, "compile": 4}
