"""More selections whose size depends on the data (GB0036) reduced with a mask of static shape
(``dynamic_shape_fixes``): ``x[torch.nonzero(x > 0, as_tuple=True)]`` and its method spelling
as ``x[x > 0]``. Each checked with real torch.compile on the CPU: dynamo breaks the graph
before (``torch._dynamo.explain``), not after, and the outputs, eager and compiled
(``compiled_proof``: aot_eager, and inductor where it builds), are those of the code before (up
to float rounding: a masked sum adds in another order)."""

from __future__ import annotations

import textwrap

import pytest
import torch
from compiled_proof import assert_outputs_kept

from fxcore.fixing import dynamic_shape_fixes


def _function(source: str):
    namespace: dict = {}
    exec(compile(source, "<selection>", "exec"), namespace)
    return namespace["f"]


def _source(body: str) -> str:
    return "import torch\n\n\ndef f(x, m):\n" + textwrap.indent(textwrap.dedent(body), "    ")


def _breaks(function, x: torch.Tensor, m: torch.Tensor) -> bool:
    torch._dynamo.reset()
    return bool(torch._dynamo.explain(function)(x, m).break_reasons)


#: (the statement, what it becomes): sums and means of selections, several spellings.
REWRITES = (
    ("return x[torch.nonzero(x > 0, as_tuple=True)].sum()\n",
     "return torch.where(x > 0, x, 0).sum()"),
    ("return x[(x > 0.5).nonzero(as_tuple=True)].mean()\n",
     "return (torch.where(x > 0.5, x, 0).sum() / (x > 0.5).sum())"),
    ("return torch.sum(x[torch.nonzero(x < 0.2, as_tuple=True)])\n",
     "return torch.where(x < 0.2, x, 0).sum()"),
)


@pytest.mark.slow
@pytest.mark.matrix
@pytest.mark.timeout(900)  # the first compile with inductor builds its CPU toolchain
@pytest.mark.parametrize(("statement", "rewritten"), REWRITES)
def test_selection_reduced_with_a_static_mask(statement: str, rewritten: str) -> None:
    source = _source(statement)
    fixed = dynamic_shape_fixes.masked_reduction(source, 5)
    assert rewritten in fixed
    generator = torch.Generator().manual_seed(3)
    x = torch.randn(4, 8, generator=generator)
    m = torch.rand(4, 8, generator=generator) > 0.5
    before, after = _function(source), _function(fixed)
    assert _breaks(before, x, m)
    assert not _breaks(after, x, m)
    torch._dynamo.reset()
    assert torch.compile(after, backend="eager", fullgraph=True)(x, m) is not None
    assert_outputs_kept(lambda: before, lambda: after, [(x, m)])


def test_other_selections_are_left() -> None:
    # A nonzero of another tensor (its shape may differ), or a nonzero's index tensor
    # (as_tuple=False, which selects rows), selects otherwise.
    for statement in ("return x[torch.nonzero(m, as_tuple=True)].sum()\n",
                      "return x[torch.nonzero(x > 0)].sum()\n",
                      "return x[(x > 0).nonzero(as_tuple=False)].sum()\n"):
        source = _source(statement)
        assert dynamic_shape_fixes.masked_reduction(source, 5) == source, statement
