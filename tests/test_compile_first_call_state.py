"""A forward that keeps state on its instance from its first call (a cache, as MONAI's Warp
keeps its reference grid on ``self``) under compile mode's later runs of one capture on meta:
the run again on fake CPU tensors (an index list sends it there) and the run with values
planned for numbers read from data (``value_plan``, after its own eager run). Each met the
instance as the run before it left it, the cache filled with that run's meta tensors, and
skipped the code real torch's first call compiles: a class real torch breaks twice was
"traceable". Each run now starts from the instance as built and the seeded generators; the
verdicts are compared with real torch.compile on the CPU, a fresh instance on real tensors."""

from __future__ import annotations

import json
from pathlib import Path

from real_torch_answers import compile_answers_of

from cli_support import fx_lsp

SOURCE = '''import torch
from torch import nn


class CachedPositions(nn.Module):
    """Keeps the positions it adds from its first call; its index list sends fx-lsp's
    compile on meta to a second run on fake CPU tensors."""

    def __init__(self):
        super().__init__()
        self.positions = None

    def forward(self, x):
        if self.positions is None or self.positions.shape != x.shape:
            print("positions made")
            self.positions = torch.arange(x.shape[-1]).expand(x.shape).to(x)
            self.positions.requires_grad = False
        order = list(range(x.shape[-1] - 1, -1, -1))
        return (x + self.positions)[..., order]


class CachedScale(nn.Module):
    """Keeps a scale from its first call, then checks a number read from the data: fx-lsp's
    compile on meta plans a value for it and compiles again."""

    def __init__(self):
        super().__init__()
        self.scale = None

    def forward(self, x):
        if self.scale is None:
            print("scale made")
            self.scale = x.new_full(x.shape[-1:], 2.0)
        n = x.sum().item()
        torch._check(n > 2)
        return x * self.scale + n
'''


def test_each_compile_run_meets_the_instance_as_built(tmp_path: Path) -> None:
    path = tmp_path / "first_call_state.py"
    path.write_text(SOURCE, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text("".join(
        f'[tool.fx-lsp.modules."first_call_state:{name}"]\ninputs = {{x = "float32[2, 8]"}}\n'
        for name in ("CachedPositions", "CachedScale")), encoding="utf-8")
    completed = fx_lsp("check", "--no-cache", "--mode", "compile", "--output-format", "json",
                       path.name, cwd=tmp_path)
    report = json.loads(completed.stdout)
    by_class = {module["class"]: module for module in report["modules"]}
    real = compile_answers_of(path)
    assert set(real) == set(by_class) == {"CachedPositions", "CachedScale"}
    for name, truth in real.items():
        module = by_class[name]
        assert sorted([failure["line"], failure["code"]] for failure in module["failures"]) \
            == truth["breaks"], name
        assert module["graph_count"] == truth["graphs"], name
    # Each class went through the later run it is written for, and real torch's first call
    # breaks in the code that fills its cache (the print).
    assert any("index list" in note for note in by_class["CachedPositions"]["capture_notes"])
    planned = [diagnostic["message"] for diagnostic in report["diagnostics"]
               if diagnostic["classes"] == ["CachedScale"]]
    assert planned and all("was taken as" in message for message in planned)
    for name, line in (("CachedPositions", 15), ("CachedScale", 32)):
        assert [line, "GB0059"] in real[name]["breaks"], name
