"""A forward that keeps state on its instance from its first call (a cache, as MONAI's Warp
keeps its reference grid on ``self``) under compile mode's later runs of one capture on meta:
the run again on fake CPU tensors (an index list sends it there) and the run with values
planned for numbers read from data (``value_plan``, after its own eager run). Each met the
instance as the run before it left it, the cache filled with that run's meta tensors, and
skipped the code real torch's first call compiles: a class real torch breaks twice was
"traceable". Each run now starts from the instance as built and the seeded generators; the
verdicts are compared with real torch.compile on the CPU, a fresh instance on real tensors,
and the loop of calls after the first with real torch's same calls."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
import torch
from real_compile import eager_compiled
from real_torch_answers import compile_answers_of
from source_modules import load_module

from fxcore.worker.capture.compile import container_lengths, recompile_loop

from cli_support import fx_lsp

INDEX_LIST_ON_META = ("this torch compiles an index list on meta: no later run on fake CPU "
                      "tensors to check (the verdicts above agree with real torch)")

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

#: A reference grid cached per batch and spatial size (MONAI's Warp's, as it means it), made by
#: a helper that breaks the graph (torch.meshgrid's keyword defaults), as MONAI's does.
GRID_SOURCE = '''import torch
from torch import nn


def grid_of(*tensors):
    defaults = torch.meshgrid.__kwdefaults__
    if defaults is not None and "indexing" in defaults:
        return torch.meshgrid(*tensors, indexing="ij")
    return torch.meshgrid(*tensors)


class CachedGrid(nn.Module):
    def __init__(self):
        super().__init__()
        self.ref_grid = None

    def reference_grid(self, x):
        if self.ref_grid is not None and self.ref_grid.shape[0] == x.shape[0] \\
                and self.ref_grid.shape[2:] == x.shape[2:]:
            return self.ref_grid
        points = [torch.arange(0, dim) for dim in x.shape[2:]]
        grid = torch.stack(grid_of(*points), dim=0)
        grid = torch.stack([grid] * x.shape[0], dim=0).to(x)
        self.ref_grid = grid
        self.ref_grid.requires_grad = False
        return self.ref_grid

    def forward(self, x):
        grid = (self.reference_grid(x) + x).permute(0, 2, 3, 1)
        return grid[..., [1, 0]]
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
    # Real torch's first call breaks in the code that fills the cache (the print), and each
    # class went through the later run it is written for where this torch takes it (2.15
    # takes none for CachedPositions' index list: its capture has no index-list note).
    for name, line in (("CachedPositions", 15), ("CachedScale", 32)):
        assert [line, "GB0059"] in real[name]["breaks"], name
    planned = [diagnostic["message"] for diagnostic in report["diagnostics"]
               if diagnostic["classes"] == ["CachedScale"]]
    assert planned and all("was taken as" in message for message in planned)
    if not any("index list" in note for note in by_class["CachedPositions"]["capture_notes"]):
        pytest.skip(INDEX_LIST_ON_META)


@pytest.mark.slow
@pytest.mark.skipif(not recompile_loop.can_observe(),
                    reason="this torch reports no guard failures to a hook")
def test_the_loop_of_calls_after_a_cache_filling_first_call_is_real_torchs(tmp_path: Path
                                                                          ) -> None:
    """The loop of calls (``recompile_loop``) after the fake-CPU run's first call, on a class
    whose cache the meta run had filled, found a recompilation for every batch size (FX506)
    that real torch's same calls on real tensors do not make."""
    path = tmp_path / "cached_grid.py"
    path.write_text(GRID_SOURCE, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.fx-lsp.modules."cached_grid:CachedGrid"]\ninputs = {x = "float32[2, 2, 4, 4]"}\n',
        encoding="utf-8")
    completed = fx_lsp("check", "--no-cache", "--mode", "compile", "--output-format", "json",
                       path.name, cwd=tmp_path)
    (module,) = json.loads(completed.stdout)["modules"]

    model = load_module(path, "cached_grid").CachedGrid()
    compiled, observer = eager_compiled(model)
    tensors = {"x": torch.ones(2, 2, 4, 4)}
    numbers = recompile_loop.number_arguments(model, {})

    def call(inputs: dict[str, object], values: dict[str, object]) -> None:
        with torch.no_grad():
            compiled(**inputs, **values)

    try:
        with contextlib.redirect_stdout(io.StringIO()):
            call(tensors, numbers)
            real = recompile_loop.run_loop(call, observer, tensors, numbers, numbers, 120.0,
                                           container_lengths.varied(model, tensors))
    finally:
        torch._dynamo.reset()
    assert real.finished
    codes = {"every-call": "FX505", "every-size": "FX506", "every-number": "FX507",
             "every-length": "FX508"}
    assert sorted((hint["code"], hint["line"]) for hint in module["hints"]) == sorted(
        (codes[cause.kind], next((position.line for position in reversed(cause.stack)
                                  if position.filename == str(path)), None))
        for cause in real.causes), real
    if not any("index list" in note for note in module["capture_notes"]):
        pytest.skip(INDEX_LIST_ON_META)
