"""Which fixes fit a graph break at a value torch.compile cannot keep in its graph (``pt2_plan``
asks here for every compile failure): the smallest rewrite that keeps the value a tensor of
static shape, else the config option torch's hint names, set at the top of the file.

- GB0124 (``.item()``): ``scalar_fixes.drop_item`` where the value only feeds tensor
  arithmetic or a condition; GB0124 and GB0033 (``.tolist()``, a number read from data):
  ``capture_scalar_outputs``;
- GB0036 (a dynamic-shape operator): ``dynamic_shape_fixes.masked_reduction`` for a sum or mean
  of ``x[x > 0]``; else ``capture_dynamic_output_shape_ops``;
- GB0170 (a branch on tensor data) on a conditional expression: ``loop_fixes``'
  ``torch.where``; GB7000 (a break in a loop) at an ``if ...: break`` opening a bounded loop:
  ``loop_fixes.mask_bounded_loop``.

A rewrite is offered only where its edit changes the file: planning computes it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from fxcore.fixing import dynamic_shape_fixes, loop_fixes, recompile_fixes, scalar_fixes
from fxcore.fixing.fix import Fix, Run
from fxcore.fixing.pt2_fixes import ensure_torch_import
from fxcore.model.results import Failure
from fxcore.rules.compile import graph_break_kind

#: The rewrites of each break, with their titles and whether they keep outputs exactly.
_REWRITES: dict[str, tuple[tuple[Callable[[str, int], str], str, bool], ...]] = {
    graph_break_kind("GB0124"): (
        (scalar_fixes.drop_item, "Keep the value a tensor: drop .item() where it feeds tensor "
         "arithmetic or a condition (same outputs where the other operand is a tensor)",
         False),),
    graph_break_kind("GB0036"): (
        (dynamic_shape_fixes.masked_reduction, "Reduce with a mask of static shape: "
         "torch.where(mask, x, 0).sum() for x[mask].sum(), sum over count for .mean() (same "
         "elements; a float sum's last bits may differ)", False),),
    graph_break_kind("GB0170"): (
        (loop_fixes.if_expression_to_where, "Rewrite the conditional expression as "
         "torch.where (same outputs where both branches have one shape; both are computed)",
         False),),
    graph_break_kind("GB7000"): (
        (loop_fixes.mask_bounded_loop, "Mask the loop's steps with torch.where instead of "
         "breaking out early (same outputs; every step of the range runs)", False),),
}

_SCALARS = ("torch._dynamo.config.capture_scalar_outputs",
            "Set torch._dynamo.config.capture_scalar_outputs = True in this file (changes what "
            "compiled code does: numbers read from tensors become symbolic in the graph, a "
            "branch or size on them needs torch._check, and it holds for every torch.compile "
            "once the file is imported)")
_SHAPES = ("torch._dynamo.config.capture_dynamic_output_shape_ops",
           "Set torch._dynamo.config.capture_dynamic_output_shape_ops = True in this file "
           "(changes what compiled code does: sizes read from data become symbolic, which "
           "some backends and later operations cannot compile, and it holds for every "
           "torch.compile once the file is imported)")
#: The config option torch's hint names for each break.
_OPTIONS = {graph_break_kind("GB0124"): _SCALARS, graph_break_kind("GB0033"): _SCALARS,
            graph_break_kind("GB0036"): _SHAPES}


def fixes_of(failure: Failure, source: str, run: Run) -> list[Fix]:
    """The rewrites that change the statement the break is at (preferred), then the config
    option."""
    found = []
    for edit, title, safe in _REWRITES.get(failure.kind, ()):
        if run(edit, source, failure.line) != source:
            found.append(Fix(title, failure.path, functools.partial(edit, line=failure.line),
                             True, safe=safe, position=(failure.line, failure.column),
                             import_edit=ensure_torch_import))
    if failure.kind in _OPTIONS:
        option, title = _OPTIONS[failure.kind]
        found.append(Fix(title, failure.path, functools.partial(
            recompile_fixes.set_config_option, option=option, value=True), not found,
            safe=False, import_edit=ensure_torch_import, config_option=option))
    return found
