"""Tensors the code makes from its own Python numbers (``torch.tensor([3, 5])``) and reads back
(``.tolist()``, ``.item()``, ``if t:``): on meta such a tensor has no data, and the stand-in of
ones split by ``[1, 1]`` where the code wrote ``[3, 5]``, so the search chose an input real torch
cannot run (the GPU's record of ``ToListSplit``: float32[2], on which the split fails).
``fxcore.worker.meta.literal_values`` keeps the numbers; the stand-ins give them back."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from library_verdicts import checked_against_real_torch

from fxcore.worker.meta.literal_values import literal_of, literal_tensors

LITERALS = '''
import torch
from torch import nn


class ToListSplit(nn.Module):
    def forward(self, x):
        sizes = torch.tensor([3, 5], device=x.device).tolist()
        a, b = x.split(sizes, dim=-1)
        return a.sum(-1) + b.sum(-1)


class LiteralFlag(nn.Module):
    def forward(self, x):
        if torch.tensor(0, device=x.device):
            return x.view(3, -1)
        return x + 1


class LiteralWidth(nn.Module):
    def forward(self, x):
        width = int(torch.tensor([4.0], device=x.device))
        return x.reshape(x.shape[0], width, -1).sum(-1)
'''


def test_the_numbers_kept_are_the_code_s_own_as_tolist_gives_them() -> None:
    with literal_tensors():
        sizes = torch.tensor([3, 5], device="meta")
        table = torch.tensor(((1, 2), (3, 4)), dtype=torch.float16, device="meta")
        flag = torch.as_tensor(True, device="meta")
        computed = torch.tensor([3, 5], device="meta") * 2
        of_symbols = torch.tensor([torch.ones((), device="meta")], device="meta")
    assert literal_of(sizes) == [3, 5]
    assert literal_of(table) == [[1.0, 2.0], [3.0, 4.0]]
    assert literal_of(flag) is True
    # Views of one (a fake tensor's ``tolist`` asks each element's ``item``) read its numbers.
    assert [literal_of(element) for element in sizes.unbind()] == [3, 5]
    assert literal_of(table[:, 1]) == [2.0, 4.0]
    assert literal_of(table.t()) == [[1.0, 3.0], [2.0, 4.0]]
    assert literal_of(sizes.view(torch.float64)) is None
    # What an operator made of one, or one made of tensors, has no numbers of the code's.
    assert literal_of(computed) is None
    assert literal_of(of_symbols) is None
    # Changed in place, the kept numbers are no longer its values.
    sizes.add_(1)
    assert literal_of(sizes) is None
    # Made outside the block: nothing is known of it.
    assert literal_of(torch.tensor([3, 5], device="meta")) is None


@pytest.mark.slow
def test_a_forward_that_reads_its_own_numbers_gets_real_torchs_inputs_and_verdicts(
        tmp_path: Path) -> None:
    (tmp_path / "literals.py").write_text(LITERALS)
    classes = checked_against_real_torch(tmp_path, ["literals.py"])
    assert set(classes) == {"ToListSplit", "LiteralFlag", "LiteralWidth"}
    # The split by [3, 5] runs on eight features, not on the first plain shape, float32[2].
    assert classes["ToListSplit"]["export"]["inputs"]["tensors"] == {"x": "float32[2, 8]"}
    for name, by_mode in classes.items():
        # The numbers were the code's, not stood in: the note says no value was taken as one.
        assert "taken as one" not in (by_mode["export"]["inputs"]["note"] or ""), name
    # The false branch, as on the CPU: the true one's view(3, -1) fits no input tried.
    assert classes["LiteralFlag"]["export"]["status"] == "traceable"
