"""Rows filtered by a boolean test read with ``.tolist()`` kept a boolean mask in the graph
(``row_mask_fixes``): the edit's text, made once, only on filters of that shape, planned with
the option the mask's selection needs for the class's calls. Proven with real torch on the CPU
(``aot_eager``) over ``kinds_corpus/row_filters.py`` through ``fx-lsp check --mode compile
--fix --unsafe-fixes``: the breaks are gone, the outputs (eager and compiled) the same."""

from __future__ import annotations

from pathlib import Path

import pytest
from fix_all_outputs import assert_breaks_gone_outputs_kept, fixed_and_measured

from fxcore.fixing import row_mask_fixes, scoped_options, value_plan
from fxcore.fixing.fix import run_here
from fxcore.model.results import Failure, ModuleResult
from fxcore.rules.compile import graph_break_kind

CORPUS = Path(__file__).resolve().parent / "kinds_corpus" / "row_filters.py"

HEADER = "import torch\n\n\nclass Filter:\n    def forward(self, x, t):\n"
#: Body (its first line the ``.tolist()``'s, line 6) -> the body fixed, None where unchanged.
CASES = {
    "keep = (x.sum(-1) > t).tolist()\nrows = [r for r, k in zip(x, keep) if k]\n"
    "return torch.stack(rows)\n":
        "keep = x.sum(-1) > t\nrows = x[keep]\nreturn rows\n",
    "keep = x.amax(-1).ge(t).tolist()\nreturn torch.cat([x[i] for i, k in enumerate(keep) if k])\n":
        "keep = x.amax(-1).ge(t)\nreturn x[keep].flatten(0, 1)\n",
    "rows = [r for k, r in zip((~(x[:, 0] < t)).tolist(), x, strict=True) if k]\n"
    "return torch.stack(rows, dim=0) + 1\n":
        "rows = x[~(x[:, 0] < t)]\nreturn rows + 1\n",
    # the flags read again, the rows used as a list, along another dimension, not boolean
    "keep = (x.sum(-1) > t).tolist()\nrows = [r for r, k in zip(x, keep) if k]\n"
    "return torch.stack(rows), keep\n": None,
    "keep = (x.sum(-1) > t).tolist()\nrows = [r for r, k in zip(x, keep) if k]\n"
    "return len(rows)\n": None,
    "keep = (x.sum(-1) > t).tolist()\nrows = [r for r, k in zip(x, keep) if k]\n"
    "return torch.stack(rows, 1)\n": None,
    "keep = x.sum(-1).tolist()\nrows = [r for r, k in zip(x, keep) if k]\n"
    "return torch.stack(rows)\n": None,
    "keep = (x.sum(-1) > t).tolist()\nrows = [r * 2 for r, k in zip(x, keep) if k]\n"
    "return torch.stack(rows)\n": None,
    "keep = (x.sum(-1) > t).tolist()\nrows = [r for r, k in zip(x, keep, y) if k]\n"
    "return torch.stack(rows)\n": None,
}


def _source(body: str) -> str:
    return HEADER + "".join(f"        {line}\n" for line in body.splitlines())


@pytest.mark.parametrize("body", list(CASES))
def test_a_filter_of_rows_becomes_a_mask(body: str) -> None:
    source, expected = _source(body), CASES[body]
    fixed = row_mask_fixes.rows_to_mask(source, 6)
    assert fixed == (source if expected is None else _source(expected))
    assert row_mask_fixes.rows_to_mask(fixed, 6) == fixed


def test_the_mask_is_planned_with_the_option_for_the_class() -> None:
    source = _source(next(iter(CASES)))
    failure = Failure(code="GB0109", kind=graph_break_kind("GB0109"), message="",
                      path="/w/m.py", line=6, column=9, end_line=6, end_column=40)
    module = ModuleResult(path="/w/m.py", line=4, column=1, end_line=9, end_column=2,
                          class_name="Filter", qualified_name="m:Filter", status="failed")
    fixes = value_plan.fixes_of(failure, module, source, lambda path: source, run_here)
    if scoped_options.why_not_scoped(row_mask_fixes.OPTION) is not None:
        assert fixes == []
        return
    [fix] = fixes
    assert fix.preferred and not fix.safe and "boolean mask" in fix.title
    fixed = fix.texts(lambda path: source)[1]
    assert "rows = x[keep]" in fixed
    assert "@torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True)" in fixed


@pytest.mark.slow
@pytest.mark.matrix
@pytest.mark.timeout(1800)  # three classes compiled twice per backend, and a check with --fix
def test_fix_all_keeps_row_filters_masks_outputs_kept(tmp_path: Path) -> None:
    run = fixed_and_measured(CORPUS, tmp_path)
    assert run.log.count("Keep the row filter a boolean mask") == len(run.inputs), run.log
    for name in run.inputs:
        assert_breaks_gone_outputs_kept(run, name)
