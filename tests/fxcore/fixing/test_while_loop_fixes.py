"""A ``while`` loop on tensor data as ``torch.while_loop``, or as masked steps where torch has
none (``while_loop_fixes``): the edits' text, made once, only on loops of that shape. Proven
with real torch on the CPU: the masked steps directly, ``torch.while_loop`` over
``kinds_corpus/while_loops.py`` through ``fx-lsp check --mode compile --fix --unsafe-fixes``
(``aot_eager``): the breaks are gone, the outputs (eager and compiled) the same."""

from __future__ import annotations

from pathlib import Path

import pytest
from compiled_proof import assert_outputs_kept
from fix_all_outputs import assert_breaks_gone_outputs_kept, fixed_and_measured

from fxcore.fixing import value_plan, while_loop_fixes
from fxcore.fixing.fix import run_here
from fxcore.model.results import Failure
from fxcore.rules.compile import graph_break_kind

CORPUS = Path(__file__).resolve().parent / "kinds_corpus" / "while_loops.py"

SOURCE = '''import torch


def forward(x):
    step = torch.ones_like(x)
    # shrink
    while not (x.abs() < 1).all():
        delta = x * 0.5
        x = x - delta
        step = step * 0.9
    return x + step
'''
WHILE_LOOP = '''import torch


def forward(x):
    step = torch.ones_like(x)
    # shrink
    def _loop_cond(x, step):
        return torch.logical_not((x.abs() < 1).all())
    def _loop_body(x, step):
        delta = x * 0.5
        x = x - delta
        step = step * 0.9
        return x, step
    x, step = torch.while_loop(_loop_cond, _loop_body, (x, step))
    return x + step
'''
MASKED = '''import torch


def forward(x):
    step = torch.ones_like(x)
    # shrink
    for _ in range(64):
        go = torch.logical_not((x.abs() < 1).all())
        delta = x * 0.5
        x = torch.where(go, x - delta, x)
        step = torch.where(go, step * 0.9, step)
    return x + step
'''


def test_the_loop_becomes_torch_while_loop_or_masked_steps() -> None:
    assert while_loop_fixes.while_to_while_loop(SOURCE, 7) == WHILE_LOOP
    assert while_loop_fixes.while_to_while_loop(WHILE_LOOP, 7) == WHILE_LOOP
    assert while_loop_fixes.while_to_masked_steps(SOURCE, 7) == MASKED
    assert while_loop_fixes.while_to_masked_steps(MASKED, 7) == MASKED


@pytest.mark.parametrize("body", [
    "x -= 0.5",  # in place on a tensor
    "x = x.sub_(0.5)",  # in place
    "x, step = x - step, step",  # two names at once
    "tmp = x - 1\n        x = tmp",  # a temporary read after the loop (below)
    "fresh = x - 1",  # carries nothing bound before the loop
])
def test_loops_of_other_shapes_are_left(body: str) -> None:
    source = SOURCE.replace("        delta = x * 0.5\n        x = x - delta\n"
                            "        step = step * 0.9\n", f"        {body}\n")
    source = source.replace("return x + step", "return x + step + tmp") if "tmp" in body \
        else source
    assert while_loop_fixes.while_to_while_loop(source, 7) == source


def test_without_torch_while_loop_the_masked_steps_are_planned(monkeypatch) -> None:
    failure = Failure(code="GB0170", kind=graph_break_kind("GB0170"), message="",
                      path="/w/m.py", line=7, column=5, end_line=7, end_column=30)

    def planned() -> list:
        return value_plan.fixes_of(failure, None, SOURCE, lambda path: SOURCE, run_here)

    monkeypatch.setattr(while_loop_fixes, "has_while_loop", lambda: True)
    [fix] = planned()
    assert fix.title.startswith("Rewrite the while loop as torch.while_loop")
    assert fix.texts(lambda path: SOURCE)[1] == WHILE_LOOP
    monkeypatch.setattr(while_loop_fixes, "has_while_loop", lambda: False)
    [fix] = planned()
    assert "nothing shows 64 steps are enough" in fix.title and not fix.safe
    assert fix.texts(lambda path: SOURCE)[1] == MASKED


@pytest.mark.slow
@pytest.mark.matrix
@pytest.mark.timeout(900)  # the first compile with inductor builds its CPU toolchain
def test_masked_steps_compute_what_the_loop_did_compiled_whole() -> None:
    import torch

    namespaces: list[dict] = [{}, {}]
    for namespace, text in zip(namespaces, (SOURCE, MASKED), strict=True):
        exec(compile(text, "loop.py", "exec"), namespace)
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(0)) * 4
    torch._dynamo.reset()
    explained = torch._dynamo.explain(namespaces[1]["forward"])(x.clone())
    assert explained.graph_break_count == 0, explained.break_reasons
    assert_outputs_kept(lambda: namespaces[0]["forward"], lambda: namespaces[1]["forward"],
                        [(x,)])


@pytest.mark.slow
@pytest.mark.matrix
@pytest.mark.timeout(1800)  # four classes compiled twice per backend, and a check with --fix
def test_fix_all_rewrites_while_loops_outputs_kept(tmp_path: Path) -> None:
    if not while_loop_fixes.has_while_loop():
        pytest.skip("this torch has no torch.while_loop")
    run = fixed_and_measured(CORPUS, tmp_path)
    assert run.log.count("as torch.while_loop") == len(run.inputs), run.log
    for name in run.inputs:
        assert_breaks_gone_outputs_kept(run, name)
