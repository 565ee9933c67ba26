"""Indexing with a Python list (``x[..., [1, 0]]``, MONAI's ``Warp`` reordering a grid's axes)
under torch.compile on meta: torch makes the index tensor from the list inside its indexing
binding, on the indexed tensor's device, where a meta tensor never becomes one of dynamo's fake
tensors, and dynamo's fake run refused it ("Please convert all Tensors to FakeTensors first"),
an FX502 real torch on the CPU does not give. Compiled again on fake CPU tensors, as real torch
runs it, the class compiles as it does there."""

from __future__ import annotations

import json

import torch
from torch import nn

from cli_support import fx_lsp

SOURCE = '''import torch
from torch import nn


class IndexList(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        order = list(range(x.shape[-1] - 1, -1, -1))
        return self.proj(x)[..., order]
'''


def test_an_index_list_compiles_as_on_the_cpu(tmp_path) -> None:
    (tmp_path / "index_list.py").write_text(SOURCE)
    completed = fx_lsp("check", "--no-cache", "--mode", "compile", "--output-format", "json",
                       "index_list.py", cwd=tmp_path)
    report = json.loads(completed.stdout)
    (module,) = report["modules"]
    assert (module["status"], report["diagnostics"]) == ("traceable", []), report
    assert any("index list" in note for note in module["capture_notes"]), module

    namespace: dict[str, object] = {}
    exec(compile(SOURCE, "index_list.py", "exec"), namespace)
    model = namespace["IndexList"]()
    assert isinstance(model, nn.Module)
    torch._dynamo.reset()
    explained = torch._dynamo.explain(model)(torch.randn(2, 8, 8))
    assert explained.graph_break_count == 0
