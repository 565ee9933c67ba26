"""FX403's quick fix against torch's own reading of its suggestion: the ``dynamic`` that
``fx-lsp check --fix --unsafe-fixes`` writes gives each bound the spec that
``torch.export.dynamic_shapes.refine_dynamic_shapes_from_suggested_fixes`` makes of the real
export's error (computed in the same run on CPU with real tensors) names, and the fixed spec
exports. A bound torch's suggestion does not name is the configured one (torch's helper makes
a new ``Dim`` with its default there): the range stays inside torch's."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
import torch
from source_modules import load_module

from cli_support import fx_lsp

MODEL = '''\
import torch
from torch import nn


class Narrow(nn.Module):
    def forward(self, x):
        torch._check(x.shape[0] <= 16)
        return x.relu()


class Fixed(nn.Module):
    def forward(self, x):
        if x.shape[0] == 4:
            return x * 2
        return x
'''

#: Per class: its dynamic dimension as configured.
CONFIGURED = {"Narrow": {"name": "batch", "min": 2, "max": 64},
              "Fixed": {"name": "rows", "min": 2, "max": 64}}

refine = getattr(getattr(torch.export, "dynamic_shapes", None),
                 "refine_dynamic_shapes_from_suggested_fixes", None)


def _dim(bounds: dict) -> torch.export.Dim:
    return torch.export.Dim(bounds["name"], min=bounds.get("min"), max=bounds.get("max"))


@pytest.mark.matrix
@pytest.mark.skipif(refine is None, reason="this torch has no "
                    "torch.export.dynamic_shapes.refine_dynamic_shapes_from_suggested_fixes")
def test_the_dynamic_fix_is_torchs_refined_spec(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "model.py").write_text(MODEL)
    (root / "pyproject.toml").write_text("".join(
        f'[tool.fx-lsp.modules."model:{name}"]\ninputs = {{x = "float32[4, 8]"}}\n'
        f'dynamic = {{x = {{0 = {{name = "{d["name"]}", min = {d["min"]}, '
        f'max = {d["max"]}}}}}}}\n' for name, d in CONFIGURED.items()))
    module = load_module(root / "model.py", "dynamic_model")
    x = torch.rand(4, 8)
    refined = {}
    for name, bounds in CONFIGURED.items():
        shapes = {"x": {0: _dim(bounds)}}
        with pytest.raises(Exception) as raised:
            torch.export.export(getattr(module, name)(), (), {"x": x}, dynamic_shapes=shapes,
                                strict=False)
        # As torch's docs call it: with the UserError's own message.
        refined[name] = refine(getattr(raised.value, "msg", str(raised.value)), shapes)["x"][0]
    completed = fx_lsp("check", "--mode", "export", "--fix", "--unsafe-fixes", "model.py",
                       cwd=root)
    assert completed.returncode == 0, completed.stdout + completed.stderr
    written = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["fx-lsp"]["modules"]
    # A narrower range: torch's refined maximum, the configured minimum (torch's Dim has its
    # default, 0, where its suggestion, `Dim('batch', max=16)`, names none).
    (narrow,) = written["model:Narrow"]["dynamic"]["x"].values()
    assert isinstance(refined["Narrow"], torch.export.Dim)
    assert narrow == {"name": "batch", "min": 2, "max": refined["Narrow"].max}
    assert refined["Narrow"].min <= narrow["min"] and refined["Narrow"].max == 16
    # A size the code pins: torch refines it to that int, fx-lsp drops the dimension; the
    # empty `dynamic` left says the shapes are static (no FX407 for that size).
    assert refined["Fixed"] == 4 and written["model:Fixed"]["dynamic"] == {}
    torch.export.export(module.Narrow(), (), {"x": x}, strict=False,
                        dynamic_shapes={"x": {0: _dim(narrow)}})
