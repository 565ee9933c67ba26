"""Consecutive print and logging calls kept out of compiled code under one guard
(``pt2_fixes.skip_when_compiling``): each call's fix joins the guard made next to it, whichever
is made first. Proven with real torch on the CPU (``aot_eager``) over
``kinds_corpus/guarded_logging.py`` through ``fx-lsp check --mode compile --fix
--unsafe-fixes``: the breaks are gone, the outputs (eager and compiled) the same, one guard
per run of consecutive calls."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from fix_all_outputs import assert_breaks_gone_outputs_kept, fixed_and_measured

from fxcore.fixing import pt2_fixes

CORPUS = Path(__file__).resolve().parent / "kinds_corpus" / "guarded_logging.py"

SOURCE = '''import torch


def forward(x):
    y = x.relu()
    print("a")

    # b too
    print("b", y.shape)
    return y
'''
MERGED = '''import torch


def forward(x):
    y = x.relu()
    if not torch.compiler.is_compiling():
        print("a")

        # b too
        print("b", y.shape)
    return y
'''


def test_consecutive_calls_share_one_guard_in_either_order() -> None:
    last_first = pt2_fixes.skip_when_compiling(
        pt2_fixes.skip_when_compiling(SOURCE, 9, 5), 6, 5)
    first_first = pt2_fixes.skip_when_compiling(
        pt2_fixes.skip_when_compiling(SOURCE, 6, 5), 10, 5)
    assert last_first == first_first == MERGED
    # What a guard holds is kept out already: no guard in a guard.
    assert pt2_fixes.skip_when_compiling(MERGED, 7, 9) == MERGED
    assert pt2_fixes.skip_when_compiling(MERGED, 10, 9) == MERGED


def test_a_guard_with_an_else_or_another_test_is_left_apart() -> None:
    source = SOURCE.replace('    print("a")\n',
                            '    if not torch.compiler.is_compiling():\n        print("a")\n'
                            '    else:\n        y = y + 1\n')
    fixed = pt2_fixes.skip_when_compiling(source, 12, 5)
    assert fixed.count("is_compiling()") == 2
    other = SOURCE.replace('    print("a")\n', '    if y.dim():\n        print("a")\n')
    assert pt2_fixes.skip_when_compiling(other, 10, 5).count("is_compiling()") == 1


def _guards(source: str) -> dict[str, int]:
    """Per class, the ``is_compiling()`` tests of its forward."""
    return {node.name: sum(isinstance(inner, ast.Attribute) and inner.attr == "is_compiling"
                           for inner in ast.walk(node))
            for node in ast.parse(source).body if isinstance(node, ast.ClassDef)}


@pytest.mark.slow
@pytest.mark.matrix
@pytest.mark.timeout(1800)  # three classes compiled twice per backend, and a check with --fix
def test_fix_all_guards_consecutive_calls_once_outputs_kept(tmp_path: Path) -> None:
    run = fixed_and_measured(CORPUS, tmp_path)
    assert _guards(run.path.read_text()) == {"TwoPrints": 1, "PrintThenLog": 1,
                                             "LogsAroundWork": 2}, run.path.read_text()
    for name in run.inputs:
        assert_breaks_gone_outputs_kept(run, name)
