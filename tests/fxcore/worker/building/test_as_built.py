"""``as_built`` puts an instance back as it was built after fx-lsp's own runs of forward,
the entries of the plain containers its attributes hold included: a cache keyed by a size and
filled while torch.fx traced forward held a Proxy as a key, which a later compile met (a
GB0008 at the cache's line where real torch compiles the class whole)."""

from __future__ import annotations

import torch
from torch import nn

from fxcore.worker.building.as_built import as_built


class SizeKeyedCache(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[int, torch.Tensor] = {7: torch.zeros(7)}
        self.seen: list[int] = []
        self.lengths: set[int] = set()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        length = x.shape[1]
        if length not in self.tables:
            self.tables[length] = torch.arange(8).float()
        self.seen.append(length)
        self.lengths.add(length)
        return x + 1


def test_a_trace_leaves_no_proxy_in_the_containers_forward_fills() -> None:
    model = SizeKeyedCache()
    tables, seen, lengths = model.tables, model.seen, model.lengths
    with as_built(model):
        torch.fx.symbolic_trace(model)
        assert any(isinstance(key, torch.fx.Proxy) for key in model.tables)
    # The same objects, holding what they held when built.
    assert model.tables is tables and model.seen is seen and model.lengths is lengths
    assert list(tables) == [7] and seen == [] and lengths == set()
    compiled = torch.compile(model, backend="eager", fullgraph=True)
    assert compiled(torch.ones(2, 8)).shape == (2, 8)


def test_the_block_may_put_the_containers_back_as_often_as_it_needs() -> None:
    model = SizeKeyedCache()
    with as_built(model) as put_back:
        model(torch.ones(2, 3))
        put_back()
        assert list(model.tables) == [7] and model.seen == []
        model(torch.ones(2, 4))
        assert list(model.tables) == [7, 4] and model.seen == [4]
    assert list(model.tables) == [7] and model.seen == [] and model.lengths == set()
