"""Constructor values from how the code uses them (``fxcore.worker.building.module_uses``,
the divisor rules of ``init_checks`` and float values of ``check_solver``): parameters the
constructor wraps in a module container or ``forward`` iterates or indexes and calls are
given a list of modules, never the count the name table gives (``layers``, ``blocks``); a
name divided by, or taken a remainder by, is never zero (a ``*_rate`` the table gives 0.0).
Each class is built by the real worker (``fx-lsp check``) and its export and compile
verdicts compared with real torch on the CPU, on real tensors of the inputs found.

On the branch's base none of these classes is built (no verdict).
"""

from __future__ import annotations

import ast
import runpy
from pathlib import Path

import pytest
from library_verdicts import checked_against_real_torch

from fxcore.worker.building.check_solver import solutions
from fxcore.worker.building.init_checks import init_checks
from fxcore.worker.building.module_uses import module_list_values, wrapped_parameters

CORPUS = '''"""Blocks whose constructor values only their use tells."""
from __future__ import annotations

import torch
from torch import nn


class LayerStack(nn.Module):
    def __init__(self, layers, width):
        super().__init__()
        self.layers = nn.ModuleList(layers)
        self.out = nn.Linear(width, 2)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.out(x)


class IndexedBlocks(nn.Module):
    def __init__(self, blocks, dim):
        super().__init__()
        self.blocks = blocks
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        for i in range(len(self.blocks)):
            x = self.blocks[i](x)
        return self.norm(x)


class SequencedStages(nn.Module):
    def __init__(self, stages, channels):
        super().__init__()
        self.body = nn.Sequential(*stages)
        self.head = nn.Conv2d(channels, 1, 1)

    def forward(self, x):
        return self.head(self.body(x))


class RateSqueeze(nn.Module):
    def __init__(self, channels, squeeze_rate):
        super().__init__()
        hidden = int(channels // squeeze_rate)
        self.down = nn.Conv2d(channels, hidden, 1)
        self.up = nn.Conv2d(hidden, channels, 1)

    def forward(self, x):
        return x * self.up(self.down(x)).sigmoid()


class ScaledByKeep(nn.Module):
    def __init__(self, dim, keep_drop):
        super().__init__()
        self.scale = 1.0 / keep_drop
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x) * self.scale


class RemainderHeads(nn.Module):
    def __init__(self, dim, head_rate):
        super().__init__()
        self.spare = dim % head_rate
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        return self.proj(x)
'''

#: Items a loop unpacks (``for f, g in self.blocks``): pairs, which no list of modules fits.
PAIRED = '''

class PairedBlocks(nn.Module):
    def __init__(self, blocks):
        super().__init__()
        self.blocks = blocks

    def forward(self, x):
        for f, g in self.blocks:
            x = x + g(f(x))
        return x
'''


@pytest.mark.slow
def test_values_from_use_build_each_class_and_agree_with_real_torch(tmp_path: Path) -> None:
    (tmp_path / "blocks.py").write_text(CORPUS)
    classes = checked_against_real_torch(tmp_path, ["blocks.py"])
    assert len(classes) == 6
    arguments = {name: modes["export"]["arguments"] for name, modes in classes.items()}
    assert all(given["from"] == "guessed" for given in arguments.values()), arguments
    for name, parameter in (("LayerStack", "layers"), ("IndexedBlocks", "blocks"),
                            ("SequencedStages", "stages")):
        assert "nn.ModuleList([" in arguments[name]["kwargs"][parameter], arguments[name]
    for name, parameter in (("RateSqueeze", "squeeze_rate"), ("ScaledByKeep", "keep_drop"),
                            ("RemainderHeads", "head_rate")):
        assert float(arguments[name]["kwargs"][parameter]) != 0, arguments[name]


def test_a_wrapped_or_iterated_parameter_gets_modules_and_a_fitting_guess_stays(
        tmp_path: Path) -> None:
    (tmp_path / "blocks.py").write_text(CORPUS + PAIRED)
    namespace = runpy.run_path(str(tmp_path / "blocks.py"))
    assert wrapped_parameters(namespace["LayerStack"]) == {"layers"}
    assert wrapped_parameters(namespace["SequencedStages"]) == {"stages"}
    made = module_list_values(namespace["IndexedBlocks"], {"blocks": 2, "dim": 24})
    (modules, guess), = made.values()
    assert guess == 2 and [type(m).__name__ for m in modules] == ["Linear", "Linear"]
    assert modules[0].in_features == 24
    # Items a loop unpacks are pairs, not modules: no list of modules is made for them.
    assert module_list_values(namespace["PairedBlocks"], {"blocks": 2}) == {}
    # A guess that already fits the use (a list of modules) is kept.
    assert module_list_values(namespace["IndexedBlocks"],
                              {"blocks": modules, "dim": 24}) == {}


def test_a_divisor_of_zero_is_replaced_and_the_others_kept() -> None:
    class Squeeze:
        def __init__(self, channels: int, squeeze_rate: float) -> None:
            self.hidden = channels // squeeze_rate

    checks = init_checks(Squeeze)
    assert [ast.unparse(rule) for rule in checks.rules] == ["squeeze_rate != 0"]
    found = solutions(checks, {"channels": 16, "squeeze_rate": 0.0}, {})
    assert found[0] == {"channels": 16, "squeeze_rate": 1.0}
