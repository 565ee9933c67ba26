"""Values read from tensors while fx-lsp searches for example inputs: the
search runs ``forward`` eagerly on tensors without data (meta, or fake for a model built on the
CPU), where ``.item()``, ``.tolist()``, ``int(t)``, ``float(t)`` and ``if t:`` are stood in as
the compile capture stands them in (``fxcore.worker.meta.values_read``), instead of every input
tried being refused ("Tensor.item() cannot be called on meta tensors"). Each class then gets
export and compile verdicts, each compared with real torch.export (non-strict) and
torch.compile on the CPU in the same run (``checked_against_real_torch``).

Each forward flattens its input before its first layer, so that no graph decides the input
(the fx pre-trace's graph reads ``flatten`` first) and the search must run it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from library_verdicts import checked_against_real_torch

VALUES = '''
import torch
from torch import nn


class ItemSize(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        count = (self.lin(x.flatten(1)) > 0).sum().item()
        return torch.zeros(count, 8)


class TolistLoop(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        y = self.lin(x.flatten(1))
        steps = (y > 0).sum(dim=-1).tolist()
        for _ in range(steps[0]):
            y = y * 2
        return y


class BoolBranch(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        y = self.lin(x.flatten(1))
        if (y > 0).any():
            return y
        return -y


class FloatScale(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        y = self.lin(x.flatten(1))
        scale = float(y.abs().max())
        return y / scale


class IntIndex(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        y = self.lin(x.flatten(1))
        index = int(y[0].argmax())
        return y[:, index]


class ScheduledCount(nn.Module):
    """Built on the CPU (its constructor reads a value): searched on fake tensors."""

    def __init__(self):
        super().__init__()
        self.rates = [rate.item() for rate in torch.linspace(0, 0.5, 2)]
        self.lin = nn.Linear(8, 8)

    def forward(self, x):
        count = int((self.lin(x.flatten(1)) > 0).sum())
        return torch.ones(count, 8) * self.rates[1]
'''
#: Each class, the text of the line that reads a value, and real torch's codes there (the
#: comparison above checks them too: these say what it compared).
READS = {"ItemSize": ("count = (self.lin(x.flatten(1)) > 0).sum().item()", "GB0124"),
         "TolistLoop": ("steps = (y > 0).sum(dim=-1).tolist()", "GB0033"),
         "BoolBranch": ("if (y > 0).any():", "GB0170"),
         "FloatScale": ("scale = float(y.abs().max())", "GB0124"),
         "IntIndex": ("index = int(y[0].argmax())", "GB0124"),
         "ScheduledCount": ("count = int((self.lin(x.flatten(1)) > 0).sum())", "GB0124")}


def _line(text: str) -> int:
    (line,) = [number for number, source in enumerate(VALUES.splitlines(), 1)
               if source.strip() == text]
    return line


@pytest.mark.slow
def test_a_forward_that_reads_tensor_values_gets_inputs_and_real_torchs_verdicts(
        tmp_path: Path) -> None:
    (tmp_path / "values.py").write_text(VALUES)
    classes = checked_against_real_torch(tmp_path, ["values.py"])
    assert set(classes) == set(READS)
    for name, (text, code) in READS.items():
        line = _line(text)
        for module in classes[name].values():
            inputs = module["inputs"]
            # The first plain shape the search tries: a batch of vectors, flattened as it is.
            assert inputs["tensors"] == {"x": "float32[2, 8]"}, name
            # The note says which line's values were stood in, and that the modes read them
            # their own way.
            assert f"values.py:{line} were taken as one" in inputs["note"], name
        compiled = classes[name]["compile"]
        assert [(f["code"], f["line"]) for f in compiled["failures"]] == [(code, line)], name
    assert classes["ScheduledCount"]["export"]["instantiated_on"] == "cpu"
    # torch.export reads them as unbacked values: an .item() as a size exports (the check
    # that it is one is torch's), a value Python needs at once fails at its line.
    assert classes["ItemSize"]["export"]["status"] == "traceable"
    for name in ("TolistLoop", "BoolBranch", "FloatScale", "IntIndex", "ScheduledCount"):
        assert classes[name]["export"]["status"] == "failed", name
