"""A class whose ``forward`` raises the same error on every input fx-lsp tries, where no input
could change it (a raise on a value the class set itself, a function an installed module
lacks), gets that error as its export and compile verdict (FX408, FX509) at its line, instead
of "no example inputs"; one whose error is on a statement that reads the inputs gets no
verdict, and real torch runs it on inputs a user would write. The library benchmark judges it
apart (``benchmarks/fidelity/verdicts_apart.py``): it agrees only where real torch, on the
CPU, on the instance rebuilt from the report's arguments and the first input tried, raises
the same error at the same line. Compared here with real torch in the same run, on small
classes written for it."""

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


class Flagged(nn.Module):
    """Refuses to run unless built with a flag, whatever it is given."""

    def __init__(self, enabled: bool = False):
        super().__init__()
        self.enabled = enabled
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        if not self.enabled:
            raise NotImplementedError("build it with enabled=True")
        return self.proj(x)


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


class WindowKind(nn.Module):
    """A helper refuses the window the class was built with."""

    def __init__(self, kind: str = "blackman"):
        super().__init__()
        self.kind = kind

    def window(self):
        if self.kind != "hann":
            raise ValueError(f"unknown window {self.kind}")
        return torch.hann_window(8)

    def forward(self, x):
        return x * self.window()


class Documented(nn.Module):
    """Gives torch.istft the real tensor of an old torch's format, on the very shape its
    docstring documents: the error is the code's."""

    def __init__(self, n_fft: int = 16):
        super().__init__()
        self.n_fft = n_fft

    def forward(self, S):
        """
        S : torch tensor
            Spectrogram of the shape ``(batch, n_fft//2+1, timesteps)``
        """
        angles = torch.ones(*S.shape, 2)
        return torch.istft(S.unsqueeze(-1) * angles, self.n_fft)


class Inverse(nn.Module):
    """torch.istft refuses a real tensor, and runs on a complex one: the inputs' fault."""

    def __init__(self, n_fft: int = 16):
        super().__init__()
        self.n_fft = n_fft
        self.register_buffer("window", torch.hann_window(n_fft))

    def forward(self, spec):
        return torch.istft(spec, self.n_fft, window=self.window)


class CheckedFirst(nn.Module):
    """Refuses inputs of another rank itself, then meets what torch refuses on real ones."""

    def __init__(self, n_fft: int = 16):
        super().__init__()
        self.n_fft = n_fft

    def forward(self, spec):
        assert spec.dim() == 3, "give (batch, bins, frames)"
        if spec.shape[-1] > 0:
            return torch.istft(spec, self.n_fft)
        return spec
'''

def _line_of(text: str) -> int:
    source = textwrap.dedent(WORKSPACE).lstrip().splitlines()
    return next(number for number, line in enumerate(source, 1) if text in line)


#: The line of each class's error that no input changes (a raise on a flag the class set
#: itself, a function the installed module lacks, a raise in a helper on the class's own
#: value), or that the inputs the code documents meet.
RAISING = {"Flagged": _line_of("raise NotImplementedError"),
           "Missing": _line_of("math.blackmanharris"),
           "WindowKind": _line_of("raise ValueError"),
           "Documented": _line_of("torch.istft(S.unsqueeze(-1)")}
#: Inputs a user would write for each, on which real torch raises the same.
WRITTEN = {"Flagged": {"x": torch.ones(3, 8)}, "Missing": {"x": torch.ones(3, 8)},
           "WindowKind": {"x": torch.ones(3, 8)}, "Documented": {"S": torch.ones(2, 9, 5)}}
#: Classes every input fx-lsp tries fails on, which real torch runs on inputs a user would
#: write (complex spectrograms): no verdict, never "raises on every input".
RUN_ON_OTHER_INPUTS = {"Inverse": {"spec": torch.ones(2, 9, 5, dtype=torch.complex64)},
                       "CheckedFirst": {"spec": torch.ones(2, 9, 5, dtype=torch.complex64)}}


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
        # Real torch on the CPU: the class built as the report says, on the first input
        # tried and on one written by hand.
        model = getattr(spectral_fast, name)(**{
            key: ast.literal_eval(value)
            for key, value in module["arguments"]["kwargs"].items()})
        tried = {key: torch.ones(parse_spec(spec).shape)
                 for key, spec in module["inputs"]["tensors"].items()}
        for tensors in (tried, WRITTEN[name]):
            with pytest.raises(Exception) as raised:
                model(**tensors)
            lines = [frame.lineno for frame in traceback.extract_tb(raised.tb)
                     if frame.filename == spectral_fast.__file__]
            assert lines[-1] == line
    for name, tensors in RUN_ON_OTHER_INPUTS.items():
        module = modules[name]
        assert module["status"] == "not-traced" and module["failures"] == [], module
        assert "no example inputs" in module["reason"], module["reason"]
        getattr(spectral_fast, name)()(**tensors)  # real torch runs it


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
    assert any("forward raises on every input tried" in text and "blackmanharris" in text
               for text in messages[("export", "spectral.py", "Missing")])
    # The classes without a verdict are not sent to real torch: they have no inputs.
    names = sorted(name for name in classes if name not in RUN_ON_OTHER_INPUTS)
    real = real_outcomes(str(tmp_path), [{"module": classes[name]["export"],
                                          "compile": classes[name]["compile"],
                                          "inputs": classes[name]["export"]["inputs"]["tensors"]}
                                         for name in names])
    figures = Figures("raises")
    for name, outcome in zip(names, real, strict=True):
        judge(figures, f"spectral:{name}", classes[name], outcome, {
            mode: messages.get((mode, "spectral.py", name), []) for mode in classes[name]})
    assert figures.disagreements == []
    assert figures.raised.reported == figures.raised.agree == {"export": 4, "compile": 4}
    assert figures.agree == figures.tried == {"fx": 0, "export": 5, "compile": 5}
