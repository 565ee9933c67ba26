"""The loop of calls' last call names its failed guards and compiles nothing: its compile is
one no later call would meet. Real ``torch.compile`` (the eager backend) on real CPU tensors:
each new size of ``x`` compiles again (a tensor made from ``range`` of it). Where nothing
follows the new sizes, the third of them compiles nothing, with the same cause and the same
guard quoted; where a number argument's calls follow, it compiles as before."""

from __future__ import annotations

import contextlib
import io

import pytest
import torch
from torch import nn

from fxcore.worker.capture.compile import recompile_loop

pytestmark = pytest.mark.skipif(not recompile_loop.can_observe(),
                                reason="this torch reports no guard failures to a hook")

#: dynamo's guard on the third new size, after the second compiled (sizes 4, then 5, 6, 7).
GUARD = "tensor 'x' size mismatch at index 0. expected 6, actual 7"


class Positions(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + torch.tensor(list(range(x.shape[0])), dtype=x.dtype)[:, None]


class ScaledPositions(nn.Module):
    def forward(self, x: torch.Tensor, scale: float = 2.0) -> torch.Tensor:
        return scale * x + torch.tensor(list(range(x.shape[0])), dtype=x.dtype)[:, None]


def looped(model: nn.Module) -> tuple[recompile_loop.LoopOutcome, int]:
    """The loop after a first call on a ``(4, 3)`` tensor, and the graphs it compiled."""
    graphs = []

    def counting(graph_module: torch.fx.GraphModule, _inputs: object) -> object:
        graphs.append(graph_module)
        return graph_module.forward

    tensors = {"x": torch.ones(4, 3)}
    numbers = recompile_loop.number_arguments(model, {})
    torch._dynamo.reset()
    observer = recompile_loop.Observer()
    compiled = recompile_loop.optimize(model, counting, False, observer)

    def call(inputs: dict[str, object], values: dict[str, object]) -> None:
        with torch.no_grad():
            compiled(**inputs, **values)

    with contextlib.redirect_stderr(io.StringIO()):
        call(tensors, numbers)
        first = len(graphs)
        outcome = recompile_loop.run_loop(call, observer, tensors, numbers, numbers, 120.0)
    torch._dynamo.reset()
    return outcome, len(graphs) - first


def test_the_last_new_size_compiles_nothing_and_finds_the_same_cause() -> None:
    outcome, graphs = looped(Positions())
    # The same inputs, then sizes 5, 6 and 7: the first two compile, the last does not.
    assert (outcome.calls, graphs, outcome.frames) == (4, 2, 2)
    assert [(cause.kind, cause.guard) for cause in outcome.causes] == [("every-size", GUARD)]


def test_a_new_size_that_calls_follow_compiles() -> None:
    """The number's three values follow the sizes: the third size compiles, as real torch
    does, and the values then meet its cache entry."""
    outcome, graphs = looped(ScaledPositions())
    assert graphs >= 3
    assert ("every-size", GUARD) in [(cause.kind, cause.guard) for cause in outcome.causes]

