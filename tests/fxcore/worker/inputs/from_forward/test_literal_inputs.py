"""Forwards that take more than tensors. A ``forward`` annotated with
literal kinds gets literals beside its tensors
(``fxcore.worker.inputs.from_forward.literal_arguments``: a
feature pyramid's ``names: list[str]``, a decoder's ``image_size: list[int]``); a list of
tensors indexed from its end (``results[-1]``), or only passed on, or whose item is taken by
a layer of no known size, gets items shaped as another item or the model's first sized layer
takes; a list indexed in code may hold its levels in the reverse of its layers' order; a
loose annotation (``t: int`` used as a tensor) still gets a tensor; and a ``forward`` that
takes nothing is compiled as it is called, with no inputs. Each as MONAI's
``LastLevelMaxPool``, ``LastLevelP6P7``, ``RegistrationExtractionBlock`` and ``TextEncoder``
are written, small.

On the branch's base none of these classes gets a compile verdict, and only the last an export
verdict (FX103, no example inputs).

A sequence of pairs of ints (``boxes: List[Tuple[int, int]]`` of crop offsets, ``sizes:
Sequence[Tuple[int, int]]`` of levels' (H, W)) gets a short list of small pairs, not a tensor,
which forward unpacks: before, a tensor was tried for it and every input failed ("too many
values to unpack").
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch
from forked_answer import forked_answer
from library_verdicts import checked_against_real_torch
from torch import Tensor

from fxcore.worker.inputs.from_forward.literal_arguments import literal_sets

BLOCKS = '''"""Forwards that take lists, literals or nothing."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn


class ExtraPoolLevel(nn.Module):
    def __init__(self):
        super().__init__()
        self.pool = nn.MaxPool2d(1, 2, 0)

    def forward(self, results: list[Tensor], x: list[Tensor], names: list[str]):
        names.append("pool")
        results.append(self.pool(results[-1]))
        return results, names


class ExtraConvLevels(nn.Module):
    def __init__(self, in_channels: int = 8, out_channels: int = 16):
        super().__init__()
        self.p6 = nn.Conv2d(in_channels, out_channels, 3, stride=2, padding=1)
        self.p7 = nn.Conv2d(out_channels, out_channels, 3, stride=2, padding=1)

    def forward(self, results: list[Tensor], x: list[Tensor], names: list[str]):
        p6 = self.p6(x[-1])
        p7 = self.p7(F.relu(p6))
        results.extend([p6, p7])
        names.extend(["p6", "p7"])
        return results, names


class DeepestFirst(nn.Module):
    def __init__(self, channels: tuple[int, ...] = (4, 8), out_channels: int = 2):
        super().__init__()
        self.max_level = len(channels) - 1
        self.layers = nn.ModuleList(nn.Conv2d(c, out_channels, 3, padding=1) for c in channels)

    def forward(self, x: list[Tensor], image_size: list[int]) -> Tensor:
        maps = [F.interpolate(layer(x[self.max_level - level]), size=image_size)
                for level, layer in enumerate(self.layers)]
        return torch.mean(torch.stack(maps), dim=0)


class LooseStep(nn.Module):
    def __init__(self, width: int = 8):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x: Tensor, t: int):
        return self.proj(x) * t.float().unsqueeze(-1).sigmoid()


class LearnedEmbedding(nn.Module):
    def __init__(self, classes: int = 4, width: int = 8):
        super().__init__()
        self.register_buffer("table", torch.randn(classes, width))
        self.project = nn.Linear(width, width)

    def forward(self):
        return F.relu(self.project(self.table)).unsqueeze(2).unsqueeze(2)
'''


@pytest.mark.slow
def test_lists_literals_and_no_inputs_get_verdicts_real_torch_agrees_with(
        tmp_path: Path) -> None:
    (tmp_path / "blocks.py").write_text(BLOCKS)
    classes = checked_against_real_torch(tmp_path, ["blocks.py"])
    assert set(classes) == {"ExtraPoolLevel", "ExtraConvLevels", "DeepestFirst", "LooseStep",
                            "LearnedEmbedding"}
    # A loose annotation (``t: int`` used as a tensor) keeps the tensor the search finds.
    loose = classes["LooseStep"]["export"]["inputs"]
    assert set(loose["tensors"]) == {"x", "t"} and not loose.get("values"), loose
    for name in ("ExtraPoolLevel", "ExtraConvLevels"):
        inputs = classes[name]["compile"]["inputs"]
        assert inputs["values"] == {"names": "['0']"}, inputs
        assert "names=['0'] as annotated" in inputs["note"]
    deepest = classes["DeepestFirst"]["export"]["inputs"]
    # The deepest level (8 channels, the last layer's) first, and a 2-d size.
    assert deepest["tensors"]["x"].startswith("[float32[2, 8, "), deepest
    assert deepest["values"] == {"image_size": "[32, 32]"}
    assert "in reverse order" in deepest["note"]
    assert classes["LearnedEmbedding"]["compile"]["inputs"]["tensors"] == {}
    assert classes["LearnedEmbedding"]["compile"]["status"] == "traceable"


def test_only_required_arguments_annotated_as_literals_get_values() -> None:
    class Block:
        def forward(self, x, y: Tensor, names: list[str], size: tuple[int, ...],
                    mode: str | None, scale: float = 2.0, *rest: int) -> None: ...

    sets = literal_sets(Block, {})
    assert sets == [{"names": ["0"], "size": (32, 32), "mode": "0"},
                    {"names": ["0"], "size": (32, 32, 32), "mode": "0"},
                    {"names": ["0"], "size": (32,), "mode": "0"}]
    assert literal_sets(Block, {"names": ["a"], "size": (4,), "mode": "x"}) == []


PAIRS = '''"""Forwards that take sequences of pairs of ints."""
from typing import List, Sequence, Tuple

from torch import Tensor, nn


class Crops(nn.Module):
    def __init__(self, channels: int = 8):
        super().__init__()
        self.proj = nn.Conv2d(3, channels, 3, padding=1)

    def forward(self, x: Tensor, boxes: List[Tuple[int, int]]) -> Tensor:
        y = self.proj(x)
        return sum(y[:, :, top:top + 4, left:left + 4] for top, left in boxes)


class Levels(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: Tensor, sizes: Sequence[Tuple[int, int]]) -> list[Tensor]:
        x = self.proj(x)
        levels, start = [], 0
        for h, w in sizes:
            level = x[:, start:start + h * w].transpose(1, 2)
            levels.append(level.reshape(x.shape[0], -1, h, w))
            start += h * w
        return levels
'''


def test_sequences_of_int_sequences_get_pairs_of_small_sizes() -> None:
    class Block:
        def forward(self, boxes: list[tuple[int, int]], rows: list[list[int]],
                    pair: tuple[int, int], names: tuple[str, str]) -> None: ...

    sets = literal_sets(Block, {})
    assert sets[0] == {"boxes": [(4, 4), (4, 4)], "rows": [[4, 4], [4, 4]], "pair": (32, 32),
                       "names": ("0", "0")}
    # The outer length varies as a size's does; a fixed tuple keeps its members.
    assert [values["boxes"] for values in sets] == [[(4, 4)] * 2, [(4, 4)] * 3, [(4, 4)]]
    assert {values["pair"] for values in sets} == {(32, 32)}


@pytest.mark.slow
def test_sequences_of_pairs_get_verdicts_real_torch_agrees_with(tmp_path: Path) -> None:
    (tmp_path / "pairs.py").write_text(PAIRS)
    classes = checked_against_real_torch(tmp_path, ["pairs.py"])
    for name, argument in (("Crops", "boxes"), ("Levels", "sizes")):
        for mode in ("export", "compile"):
            inputs = classes[name][mode]["inputs"]
            assert argument not in inputs["tensors"], inputs
            assert inputs["values"] == {argument: "[(4, 4), (4, 4)]"}, inputs
            assert classes[name][mode]["status"] == "traceable", classes[name][mode]

    def by_hand() -> dict[str, str]:
        # What a user writes: crops at two corners, levels of 4x4 and 2x2 tokens.
        spec = importlib.util.spec_from_file_location("pairs", tmp_path / "pairs.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        written = {"Crops": (module.Crops(), (torch.randn(1, 3, 16, 16), [(0, 0), (8, 8)])),
                   "Levels": (module.Levels(), (torch.randn(1, 20, 16), [(4, 4), (2, 2)]))}
        verdicts = {}
        for name, (model, inputs) in written.items():
            model(*inputs)
            torch.export.export(model, inputs)
            verdicts[name] = "traceable"
        return verdicts

    assert forked_answer(by_hand, "the pairs' classes on inputs a user writes") \
        == {"Crops": "traceable", "Levels": "traceable"}
