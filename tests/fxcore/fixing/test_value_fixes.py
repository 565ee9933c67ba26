"""The edits of ``value_plan``'s fixes, on the shapes of code they take and those they leave
alone, and the planner's choice between a rewrite and torch's config option. Each rewrite's
outputs are compared with the code before it by running both with real torch on the CPU."""

from __future__ import annotations

import textwrap

import torch

from fxcore.fixing import dynamic_shape_fixes, loop_fixes, scalar_fixes, value_plan
from fxcore.fixing.fix import run_here
from fxcore.model.results import Failure
from fxcore.rules.compile import graph_break_kind


def _source(body: str) -> str:
    return "import torch\n\n\ndef f(x):\n" + textwrap.indent(textwrap.dedent(body), "    ")


def _same_outputs(before: str, after: str) -> None:
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(3))
    run_before: dict = {}
    run_after: dict = {}
    exec(before, run_before)
    exec(after, run_after)
    assert torch.allclose(run_before["f"](x.clone()), run_after["f"](x.clone()),
                          rtol=1e-5, atol=1e-6, equal_nan=True)


def test_item_beside_a_tensor_stays_a_tensor() -> None:
    source = _source("return x * x.abs().max().item() + (x - x.mean().item())\n")
    fixed = scalar_fixes.drop_item(source, 5)
    assert "return x * x.abs().max() + (x - x.mean())" in fixed
    _same_outputs(source, fixed)


def test_item_beside_a_number_or_another_item_is_left() -> None:
    for body in ("return x * (x.max().item() * 2)\n", "return x.max().item() + x.min().item()\n",
                 "return range(x.sum().item())\n"):
        source = _source(body)
        assert scalar_fixes.drop_item(source, 5) == source


def test_item_as_a_conditional_expressions_condition_is_dropped() -> None:
    source = _source("return x if (x.mean() > 0).item() else -x\n")
    assert "if (x.mean() > 0) else" in scalar_fixes.drop_item(source, 5)


def test_masked_sum_and_mean_keep_static_shapes() -> None:
    source = _source("a = x[x > 0].sum()\nb = torch.mean(x[x < 0.5])\nreturn a + b\n")
    fixed = dynamic_shape_fixes.masked_reduction(source, 5)
    fixed = dynamic_shape_fixes.masked_reduction(fixed, 6)
    assert "a = torch.where(x > 0, x, 0).sum()" in fixed
    assert "b = (torch.where(x < 0.5, x, 0).sum() / (x < 0.5).sum())" in fixed
    _same_outputs(source, fixed)


def test_a_mask_of_another_tensor_is_left() -> None:
    source = _source("y = x * 2\nreturn x[y > 0].sum()\n")
    assert dynamic_shape_fixes.masked_reduction(source, 6) == source


def test_conditional_expression_becomes_where() -> None:
    source = _source("return x * 2 if x.sum() > 0 else x - 1\n")
    fixed = loop_fixes.if_expression_to_where(source, 5)
    assert "return torch.where(x.sum() > 0, x * 2, x - 1)" in fixed
    _same_outputs(source, fixed)
    _same_outputs(source.replace("> 0", "< 0"), fixed.replace("> 0", "< 0"))


def test_bounded_loop_is_masked() -> None:
    source = _source("""\
        y = x * 3
        for _ in range(6):
            if not y.norm() > 1.0:
                break
            y = y * 0.7
            y = y - 0.01
        return y
        """)
    fixed = loop_fixes.mask_bounded_loop(source, 7)
    assert "stop = torch.logical_not(y.norm() > 1.0)" in fixed
    assert "y = torch.where(stop, y, y * 0.7)" in fixed and "break" not in fixed
    _same_outputs(source, fixed)


def test_loops_of_other_shapes_are_left() -> None:
    for body in (
            # a name first bound in the loop
            "for _ in range(4):\n    if x.all():\n        break\n    z = x * 2\nreturn x\n",
            # the condition reads the loop variable
            "for i in range(4):\n    if x.sum() > i:\n        break\n    x = x * 2\nreturn x\n",
            # an augmented assignment (in place on a tensor)
            "for _ in range(4):\n    if x.all():\n        break\n    x *= 2\nreturn x\n",
            # not a range
            "for _ in x:\n    if x.all():\n        break\n    x = x * 2\nreturn x\n"):
        source = _source(body)
        assert loop_fixes.mask_bounded_loop(source, 6) == source, body


def _failure(code: str, line: int) -> Failure:
    return Failure(code=code, kind=graph_break_kind(code), message="", path="/w/m.py", line=line,
                   column=5, end_line=line, end_column=6)


def test_the_rewrite_is_preferred_to_the_config_option() -> None:
    source = _source("return x * x.max().item()\n")
    rewrite, *options = value_plan.fixes_of(_failure("GB0124", 5), None, source,
                                            {"/w/m.py": source}.get, run_here)
    assert rewrite.preferred and not rewrite.safe
    assert options and not any(option.preferred or option.safe for option in options)
    assert "capture_scalar_outputs = True" in options[-1].transform(source)


def test_without_a_rewrite_the_config_option_is_the_fix() -> None:
    source = _source("return torch.nonzero(x)\n")
    [option] = value_plan.fixes_of(_failure("GB0036", 5), None, source, {}.get, run_here)
    assert option.preferred and "capture_dynamic_output_shape_ops" in option.title
    assert value_plan.fixes_of(_failure("GB0170", 5), None, source, {}.get, run_here) == []


def test_the_bounded_loop_is_masked_under_either_code_of_its_break() -> None:
    """A break in a loop is GB7000 where torch names one so, the branch's own GB0170 where it
    does not (torch 2.10): the same masked loop under both."""
    source = _source("""\
        for _ in range(8):
            if (x.abs() < 1).all():
                break
            x = x * 0.5
        return x
        """)
    for code in ("GB7000", "GB0170"):
        [fix] = value_plan.fixes_of(_failure(code, 6), None, source, {}.get, run_here)
        assert fix.title.startswith("Mask the loop's steps with torch.where"), code
        assert fix.transform(source) == loop_fixes.mask_bounded_loop(source, 6)
