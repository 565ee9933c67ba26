"""Which fixes fit a graph break at a value torch.compile cannot keep in its graph (``pt2_plan``
asks here for every compile failure): the smallest rewrite that keeps the value a tensor of
static shape, else the config option torch's hint names, set for the class's compiled calls
only where this torch can (``scoped_options``), or at the top of the file for the whole
process.

- GB0124 (``.item()``): ``math_fixes.item_math_to_torch`` where the number only feeds
  ``math`` functions (and no option where it reaches one: the break would move there);
  ``scalar_fixes.drop_item`` where the value only feeds tensor arithmetic or a condition;
  GB0124 and GB0033 (``.tolist()``, a number read from data): ``capture_scalar_outputs``;
- GB0109 and GB0033 (``.tolist()``) of a boolean test filtering rows: ``row_mask_fixes``'
  boolean mask;
- GB0036 (a dynamic-shape operator): ``dynamic_shape_fixes.masked_reduction`` for a sum or mean
  of ``x[x > 0]``; else ``capture_dynamic_output_shape_ops``;
- GB0170 (a branch on tensor data) on a conditional expression: ``loop_fixes``'
  ``torch.where``; on a ``while`` loop's test: ``while_loop_fixes``' ``torch.while_loop``;
  GB7000 (a break in a loop), or GB0170 where torch names no break in a loop, at an
  ``if ...: break`` opening a bounded loop: ``loop_fixes.mask_bounded_loop``.

A rewrite is offered only where its edit changes the file: planning computes it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from fxcore.fixing import (
    dynamic_shape_fixes,
    loop_fixes,
    math_fixes,
    recompile_fixes,
    row_mask_fixes,
    scalar_fixes,
    scoped_options,
    while_loop_fixes,
)
from fxcore.fixing.fix import Fix, Run, TextOf
from fxcore.fixing.pt2_fixes import ensure_torch_import
from fxcore.model.results import Failure, ModuleResult
from fxcore.rules.compile import graph_break_kind

#: The bounded loop's rewrite, its title and whether it keeps outputs exactly.
_MASKED_LOOP = (loop_fixes.mask_bounded_loop, "Mask the loop's steps with torch.where instead "
                "of breaking out early (same outputs; every step of the range runs)", False)
#: The rewrites of each break, with their titles and whether they keep outputs exactly.
_REWRITES: dict[str, tuple[tuple[Callable[[str, int], str], str, bool], ...]] = {
    graph_break_kind("GB0124"): (
        (math_fixes.item_math_to_torch, "Keep the number a 0-d tensor where it only feeds math "
         "functions: math.exp(t.item()) as torch.exp(t) (same outputs up to float rounding: "
         "computed in the tensor's dtype)", False),
        (scalar_fixes.drop_item, "Keep the value a tensor: drop .item() where it feeds tensor "
         "arithmetic or a condition (same outputs where the other operand is a tensor)",
         False),),
    graph_break_kind("GB0036"): (
        (dynamic_shape_fixes.masked_reduction, "Reduce with a mask of static shape: "
         "torch.where(mask, x, 0).sum() for x[mask].sum(), sum over count for .mean() (same "
         "elements; a float sum's last bits may differ)", False),),
    # A break in a loop is GB7000 where this torch names one so; torch 2.10 names the branch's
    # own GB0170 at the same ``if``: the masked loop is offered under either.
    graph_break_kind("GB0170"): (
        (loop_fixes.if_expression_to_where, "Rewrite the conditional expression as "
         "torch.where (same outputs where both branches have one shape; both are computed)",
         False), _MASKED_LOOP),
    graph_break_kind("GB7000"): (_MASKED_LOOP,),
}

#: The breaks at ``.tolist()``: of a float or boolean tensor, of numbers read from data.
_TOLIST = frozenset(graph_break_kind(code) for code in ("GB0109", "GB0033"))

#: What each config option torch's hint names makes of compiled code.
_SCALARS = ("torch._dynamo.config.capture_scalar_outputs",
            "numbers read from tensors become symbolic in the graph, a branch or size on them "
            "needs torch._check")
_SHAPES = ("torch._dynamo.config.capture_dynamic_output_shape_ops",
           "sizes read from data become symbolic, which some backends and later operations "
           "cannot compile")
#: The config option torch's hint names for each break.
_OPTIONS = {graph_break_kind("GB0124"): _SCALARS, graph_break_kind("GB0033"): _SCALARS,
            graph_break_kind("GB0036"): _SHAPES}


def _option_fixes(failure: Failure, module: ModuleResult | None, text_of: TextOf, run: Run,
                  preferred: bool) -> list[Fix]:
    """The option torch's hint names, set for the class's compiled calls only where this
    torch can (``scoped_options``), else and then for the whole process, at the top of the
    file: both unsafe, the process-wide one never preferred."""
    option, effect = _OPTIONS[failure.kind]
    found = []
    why_not = scoped_options.why_not_scoped(option)
    source = text_of(module.path) if module is not None else None
    if module is not None and source is not None and why_not is None and \
            run(scoped_options.has_forward, source, module.class_name):
        found.append(Fix(
            f"Set {option} = True for {module.class_name}'s compiled calls only (decorates "
            f"its forward: {effect}; torch.export then refuses the class, and a parent "
            "compiled whole breaks at its call)", module.path,
            functools.partial(scoped_options.scope_config_option,
                              class_name=module.class_name, option=option),
            preferred, safe=False, import_edit=ensure_torch_import))
    scoped = f"; {why_not}" if why_not is not None else ""
    found.append(Fix(
        f"Set {option} = True at the top of this file: affects every model in the process "
        f"once the file is imported ({effect}{scoped})", failure.path,
        functools.partial(recompile_fixes.set_config_option, option=option, value=True),
        preferred and not found, safe=False, import_edit=ensure_torch_import))
    return found


def fixes_of(failure: Failure, module: ModuleResult | None, source: str, text_of: TextOf,
             run: Run) -> list[Fix]:
    """The rewrites that change the statement the break is at (preferred), then the config
    option (``_option_fixes``)."""
    found = []
    if failure.kind == graph_break_kind("GB0170"):
        found = while_loop_fixes.fixes_of(failure, source, run)
    elif failure.kind in _TOLIST:
        found = row_mask_fixes.fixes_of(failure, module, source, run)
    for edit, title, safe in _REWRITES.get(failure.kind, ()):
        if run(edit, source, failure.line) != source:
            found.append(Fix(title, failure.path, functools.partial(edit, line=failure.line),
                             True, safe=safe, position=(failure.line, failure.column),
                             import_edit=ensure_torch_import))
    if failure.kind == graph_break_kind("GB0124") and \
            run(math_fixes.item_reaches_math, source, failure.line):
        return found  # the option would move the break into the math function
    if failure.kind in _OPTIONS:
        found += _option_fixes(failure, module, text_of, run, not found)
    return found
