"""The fixes of two kinds of break met in real models (transformers' Wav2Vec2 and HuBERT in
training): a branch on a boolean combination of tensor data and Python flags (random layer
drop: ``if not skip or synced:``) rewritten as ``torch.cond`` over ``torch.logical_*``, and a
tensor marked ``requires_grad`` in ``forward`` (GB0206) run only outside
torch.compile. Each on small classes written for it, several spellings, checked with real
torch.compile on the CPU: the break is there before, gone after (``fullgraph=True``
compiles), and the outputs, eager and compiled (``compiled_proof``: aot_eager, and inductor
where it builds), are those of the code before."""

from __future__ import annotations

import pytest
import torch
from compiled_proof import assert_outputs_kept

from fxcore.fixing import cond_rewrite, pt2_fixes, pt2_plan
from fxcore.fixing.fix import run_here
from fxcore.model.results import Failure
from fxcore.rules.compile import graph_break_kind

_LAYER_DROP = """\
import torch
from torch import nn


class LayerDrop(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])
        self.synced = False

    def forward(self, x, scale=1.0):
        for layer in self.layers:
            skip = torch.rand([]) < 0.5
            {condition}
                x = torch.dropout(layer(x), 0.1, True) * scale
        return x
"""

#: Spellings of the layer-drop branch: ``not``/``or``/``and`` over tensors, Python flags and
#: comparisons.
CONDITIONS = ("if not skip or self.synced:", "if not skip:",
              "if self.training and not skip:", "if (x.sum() > 0) and not skip:")


def _module(source: str) -> type[torch.nn.Module]:
    namespace: dict = {}
    exec(compile(source, "<fixed>", "exec"), namespace)
    return next(value for value in namespace.values()
                if isinstance(value, type) and issubclass(value, torch.nn.Module)
                and value is not torch.nn.Module and value.__module__ != "torch.nn")


def _run(module: torch.nn.Module, x: torch.Tensor, compiled: bool, fullgraph: bool = False
         ) -> torch.Tensor:
    torch._dynamo.reset()
    torch.manual_seed(2)  # each call draws the same random numbers
    with torch.no_grad():
        target = torch.compile(module, backend="eager", fullgraph=fullgraph) if compiled \
            else module
        return target(x.clone())


def _breaks(module: torch.nn.Module, x: torch.Tensor) -> bool:
    """Whether dynamo breaks the graph: ``fullgraph=True`` raises at the first break."""
    try:
        _run(module, x, compiled=True, fullgraph=True)
    except torch._dynamo.exc.Unsupported:
        return True
    return False


def _checked_by_real_torch(before: str, after: str) -> None:
    """Breaks before, none after; eager and compiled outputs those of ``before``'s eager."""
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(1))
    old, new = _module(before)(), _module(after)()
    old.train(), new.train()
    assert _breaks(old, x)
    assert not _breaks(new, x)
    expected = _run(old, x, compiled=False)
    assert torch.equal(_run(new, x, compiled=True, fullgraph=True), expected)
    assert_outputs_kept(lambda: _module(before)().train(), lambda: _module(after)().train(),
                        [(x,)])


@pytest.mark.slow
@pytest.mark.matrix
@pytest.mark.timeout(900)  # the first compile with inductor builds its CPU toolchain
@pytest.mark.parametrize("condition", CONDITIONS)
def test_layer_drop_branch_becomes_cond_and_compiles_whole(condition: str) -> None:
    source = _LAYER_DROP.replace("{condition}", condition)
    line = source.splitlines().index(f"            {condition}") + 1
    sites = [site for site in cond_rewrite.cond_sites(source) or () if site.line == line]
    assert sites, condition
    fixed = cond_rewrite.if_to_cond(source, sites[0].line, sites[0].column)
    assert "torch.cond(" in fixed and "if not skip" not in fixed
    _checked_by_real_torch(source, fixed)


def test_combinations_spell_each_operand_as_a_tensor() -> None:
    source = _LAYER_DROP.replace("{condition}", "if not skip or self.synced:")
    site = next(site for site in cond_rewrite.cond_sites(source) or ()
                if site.names == ("x",))
    fixed = cond_rewrite.if_to_cond(source, site.line, site.column)
    assert ("x = torch.cond(torch.logical_or(torch.logical_not(torch.as_tensor(skip)), "
            "torch.as_tensor(self.synced)), lambda: torch.dropout(layer(x), 0.1, True) * "
            "scale, lambda: x.clone())") in fixed


def test_a_combination_with_a_call_or_an_identity_test_is_left() -> None:
    # ``m is not None and m.any()``: the second operand runs only when the first holds.
    for condition in ("if x is not None and not skip:", "if not skip or f(x):"):
        source = _LAYER_DROP.replace("{condition}", condition)
        assert not [site for site in cond_rewrite.cond_sites(source) or ()
                    if site.names == ("x",)], condition


_MARKS = """\
import torch
from torch import nn


class MarksInput(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        hidden = x[:, None]
        if self.training:
            {mark}
        return self.proj(hidden).sum(1)
"""

#: Spellings of marking a tensor for autograd (``requires_grad_()`` compiles under no_grad).
MARKS = (("hidden.requires_grad = True", "GB0206"),
         ("hidden.requires_grad = self.training", "GB0206"))


@pytest.mark.slow
@pytest.mark.matrix
@pytest.mark.timeout(900)  # the first compile with inductor builds its CPU toolchain
@pytest.mark.parametrize(("mark", "code"), MARKS)
def test_requires_grad_mark_runs_outside_compile(mark: str, code: str) -> None:
    source = _MARKS.replace("{mark}", mark)
    line = source.splitlines().index(f"            {mark}") + 1
    failure = Failure(code=code, kind=graph_break_kind(code), message="", path="/w/marks.py",
                      line=line, column=13, end_line=line, end_column=14)
    fixes = pt2_plan.fixes_of(failure, None, lambda path: source, lambda path: "/", run_here)
    assert [fix.title.startswith("Mark requires_grad only outside torch.compile")
            for fix in fixes] == [True]
    assert not fixes[0].safe
    fixed = pt2_fixes.skip_when_compiling(source, line, 13)
    assert (f"            if not torch.compiler.is_compiling():\n                {mark}\n"
            in fixed)
    model = _module(source)().train()
    if not _breaks(model, torch.randn(4, 8)):
        pytest.skip(f"torch {torch.__version__}'s dynamo compiles the mark: no {code} to fix")
    _checked_by_real_torch(source, fixed)


def test_a_requires_grad_read_is_not_a_mark() -> None:
    source = _MARKS.replace("{mark}", "flag = hidden.requires_grad")
    line = source.splitlines().index("            flag = hidden.requires_grad") + 1
    assert pt2_fixes.skip_when_compiling(source, line, 13) == source
