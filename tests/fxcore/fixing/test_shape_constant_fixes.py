"""A C-extension call on values that depend on shapes only, computed in a helper
torch.compile takes as a constant (``shape_constant_fixes``): the edit's text, made once, only
on expressions of shapes, planned for the break as fx-lsp reports it. Proven with real torch on
the CPU (``aot_eager``) over ``kinds_corpus/shape_keys.py`` through ``fx-lsp check --mode
compile --fix --unsafe-fixes``: the breaks are gone, the outputs (eager and compiled) the
same."""

from __future__ import annotations

from pathlib import Path

import pytest
from fix_all_outputs import assert_breaks_gone_outputs_kept, fixed_and_measured

from fxcore.fixing import pt2_plan, shape_constant_fixes
from fxcore.fixing.fix import run_here
from fxcore.model.results import Failure
from fxcore.rules.compile import graph_break_kind

CORPUS = Path(__file__).resolve().parent / "kinds_corpus" / "shape_keys.py"

SOURCE = '''import zlib
from torch import nn


class Keyed(nn.Module):
    def forward(self, x, y):
        key = zlib.crc32(str(x.shape).encode()) % 5
        return x + key, y + zlib.crc32(str(y).encode())
'''
FIXED = '''import zlib
from torch import nn
import torch


@torch.compiler.assume_constant_result
def _shape_constant_{digest}(shape):
    # A function of shapes only: computed once per shape.
    return zlib.crc32(str(shape).encode()) % 5


class Keyed(nn.Module):
    def forward(self, x, y):
        key = _shape_constant_{digest}(x.shape)
        return x + key, y + zlib.crc32(str(y).encode())
'''


def test_the_largest_expression_of_shapes_becomes_a_constant_helper() -> None:
    [(name, _)] = shape_constant_fixes.shape_constant_helpers(SOURCE, 7)
    fixed = shape_constant_fixes.shape_constants(SOURCE, 7)
    assert fixed == FIXED.replace("_shape_constant_{digest}", name)
    assert shape_constant_fixes.shape_constants(fixed, 14) == fixed
    # Of data (``str(y)``), of a local name, of nothing the file imports: left as it is.
    assert shape_constant_fixes.shape_constants(SOURCE, 8) == SOURCE
    local = SOURCE.replace("str(x.shape)", "str(x.shape) + tag")
    assert shape_constant_fixes.shape_constants(local, 7) == local
    builtins_only = SOURCE.replace("zlib.crc32(str(x.shape).encode())", "hash(x.shape)")
    assert shape_constant_fixes.shape_constants(builtins_only, 7) == builtins_only


def test_the_fix_is_planned_for_the_skipped_call() -> None:
    failure = Failure(code="GB0007", kind=graph_break_kind("GB0007"), message="",
                      path="/w/keyed.py", line=7, column=9, end_line=7, end_column=50)
    fixes = pt2_plan.fixes_of(failure, None, lambda path: SOURCE, lambda path: "/w", run_here)
    if not shape_constant_fixes.has_constant_result():
        pytest.skip("this torch has no torch.compiler.assume_constant_result")
    assert fixes[0].title.startswith("Compute the call on shapes") and not fixes[0].safe
    assert fixes[0].texts(lambda path: SOURCE)[1] == shape_constant_fixes.shape_constants(
        SOURCE, 7)


@pytest.mark.slow
@pytest.mark.matrix
@pytest.mark.timeout(1800)  # four classes compiled twice per backend, and a check with --fix
def test_fix_all_computes_shape_keys_as_constants_outputs_kept(tmp_path: Path) -> None:
    run = fixed_and_measured(CORPUS, tmp_path)
    # One statement per class (two breaks at one of them: the fix made once).
    fixed = {line.split(": GB")[0] for line in run.log.splitlines()
             if "Compute the call on shapes" in line}
    assert len(fixed) == len(run.inputs) and "Undid" not in run.log, run.log
    for name in run.inputs:
        assert_breaks_gone_outputs_kept(run, name)
