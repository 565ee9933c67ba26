"""``forward`` arguments that are containers of tensors, as a
medical-imaging library's feature pyramids and deep-supervision heads take them
(``fxcore.worker.inputs.from_forward.container``), each verdict compared with real torch.export
(non-strict) and torch.compile on the CPU on real tensors of the JSON's inputs, in the same run
(``test_library_input_sources.checked_against_real_torch``): a feature pyramid's
``dict[str, Tensor]`` indexed like its ``ModuleDict``, whose levels must halve; one only
iterated, its levels taken by a ``ModuleList`` by position (MONAI's); an unannotated
dict indexed with strings; a ``list[Tensor]``, a ``tuple[Tensor, ...]`` and a
``Sequence[Tensor]`` zipped with a ``ModuleList``; a list a parent passes its submodule, whose
own code says nothing of it; a dict configured as Python spells it.

On the current main none of these classes gets a verdict of either mode.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from library_verdicts import checked_against_real_torch

from fxcore.model.container_spec import parse_input

import cli_support

# Real torch beside fx-lsp on whole workspaces, about 20 s: the slow tier.
pytestmark = pytest.mark.slow

PYRAMIDS = '''from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn


class FeaturePyramid(nn.Module):
    def __init__(self, in_channels=(8, 16, 32), out_channels=8):
        super().__init__()
        self.lateral = nn.ModuleDict({
            f"p{level}": nn.Conv2d(channels, out_channels, 1)
            for level, channels in zip((3, 4, 5), in_channels)})

    def forward(self, features: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        names = list(self.lateral)
        results = {}
        previous = None
        for name in reversed(names):
            lateral = self.lateral[name](features[name])
            if previous is not None:
                lateral = lateral + F.interpolate(previous, scale_factor=2.0, mode="nearest")
            results[name] = lateral
            previous = lateral
        return results


class IteratedPyramid(nn.Module):
    """MONAI's FeaturePyramidNetwork: the dict only iterated, each level taken by the
    ModuleList's block of its position."""

    def __init__(self, in_channels_list=(8, 16), out_channels=4):
        super().__init__()
        self.inner_blocks = nn.ModuleList(nn.Conv2d(c, out_channels, 1)
                                          for c in in_channels_list)

    def forward(self, x: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        names = list(x.keys())
        values = list(x.values())
        last = self.inner_blocks[-1](values[-1])
        results = [last]
        for index in range(len(values) - 2, -1, -1):
            lateral = self.inner_blocks[index](values[index])
            last = lateral + F.interpolate(last, size=lateral.shape[2:], mode="nearest")
            results.insert(0, last)
        return dict(zip(names, results))


class ImageTextHead(nn.Module):
    def __init__(self, channels=4, features=12):
        super().__init__()
        self.image = nn.Conv2d(channels, 8, 3, stride=2)
        self.text = nn.Linear(features, 8)

    def forward(self, inputs):
        image = self.image(inputs["image"]).mean((2, 3))
        text = self.text(inputs["text"]).mean(1)
        return image + text


class ListFusion(nn.Module):
    def __init__(self, in_channels=(8, 16), out_channels=4):
        super().__init__()
        self.projections = nn.ModuleList(nn.Conv2d(c, out_channels, 1) for c in in_channels)

    def forward(self, features: list[torch.Tensor]) -> torch.Tensor:
        size = features[0].shape[-2:]
        fused = 0
        for feature, projection in zip(features, self.projections):
            fused = fused + F.interpolate(projection(feature), size=size)
        return fused


class TupleHeads(nn.Module):
    def __init__(self, dims=(6, 10, 14), classes=3):
        super().__init__()
        self.heads = nn.ModuleList(nn.Linear(d, classes) for d in dims)

    def forward(self, xs: tuple[torch.Tensor, ...]) -> torch.Tensor:
        return torch.stack([head(x) for head, x in zip(self.heads, xs)]).sum(0)


class SequenceDeepSupervision(nn.Module):
    def __init__(self, channels=(4, 8)):
        super().__init__()
        self.heads = nn.ModuleList(nn.Conv2d(c, 1, 1) for c in channels)

    def forward(self, maps: Sequence[torch.Tensor]):
        outputs = [head(m) for m, head in zip(maps, self.heads)]
        if len(outputs) > 1:
            return outputs[0].mean() + outputs[1].mean()
        return outputs[0].mean()
'''


def test_containers_of_tensors_are_given_to_forward(tmp_path: Path) -> None:
    (tmp_path / "pyramids.py").write_text(PYRAMIDS)
    classes = checked_against_real_torch(tmp_path, ["pyramids.py"])
    tensors = {name: by_mode["export"]["inputs"]["tensors"]
               for name, by_mode in classes.items()}
    assert all(by_mode[mode]["inputs"]["tensors"] == tensors[name]
               for name, by_mode in classes.items() for mode in by_mode)
    # The levels in the ModuleDict's order, each as its lateral convolution takes it, halving
    # as the top-down path's upsampling needs.
    assert tensors["FeaturePyramid"] == {"features": "{'p3': float32[2, 8, 32, 32], "
                                         "'p4': float32[2, 16, 16, 16], "
                                         "'p5': float32[2, 32, 8, 8]}"}
    assert tensors["IteratedPyramid"] == {
        "x": "{'0': float32[2, 8, 32, 32], '1': float32[2, 16, 16, 16]}"}
    assert tensors["ImageTextHead"] == {
        "inputs": "{'image': float32[2, 4, 32, 32], 'text': float32[2, 8, 12]}"}
    assert tensors["ListFusion"] == {
        "features": "[float32[2, 8, 32, 32], float32[2, 16, 16, 16]]"}
    assert tensors["TupleHeads"] == {
        "xs": "(float32[2, 8, 6], float32[2, 8, 10], float32[2, 8, 14])"}
    assert tensors["SequenceDeepSupervision"] == {
        "maps": "[float32[2, 4, 32, 32], float32[2, 8, 16, 16]]"}


def test_a_container_spec_reads_back_as_it_is_spelled() -> None:
    for text in ("{'p3': float32[2, 8, 32, 32], 'p4': float32[2, 8, 16, 16]}",
                 "[float32[2, 8], int64[2]]", "(float32[2, 8],)", "float32[2, 3]"):
        assert str(parse_input(text)) == text
    for text in ("{'p3': 3}", "{'p3': float32[2, 8]", "[float99[2]]"):
        with pytest.raises(ValueError):
            parse_input(text)


DETECTOR = '''
import torch
from torch import nn


class PyramidNeck(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.convs = nn.ModuleList(nn.Conv2d(c, out_channels, 1) for c in in_channels)

    def forward(self, features):
        return [conv(feature) for conv, feature in zip(self.convs, features)]


class Detector(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.down = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.neck = PyramidNeck((8, 16), 4)

    def forward(self, image):
        c1 = self.stem(image)
        c2 = self.down(c1)
        return sum(level.mean() for level in self.neck([c1, c2]))
'''


def test_a_parent_passes_its_submodule_a_list_of_tensors(tmp_path: Path) -> None:
    # The neck's argument says nothing of being a list: the parent's call does.
    (tmp_path / "detector.py").write_text(DETECTOR)
    classes = checked_against_real_torch(tmp_path, ["detector.py"])
    for module in classes["PyramidNeck"].values():
        assert module["arguments"]["from"] == "parent"
        assert (module["inputs"]["from"], module["inputs"]["tensors"]) == (
            "parent", {"features": "[float32[2, 8, 16, 16], float32[2, 16, 8, 8]]"})


POOLED = '''
import torch
from torch import nn


class PooledLevels(nn.Module):
    def __init__(self, channels=4):
        super().__init__()
        self.proj = nn.Linear(channels, 2)

    def forward(self, levels):
        pooled = torch.stack([level.mean((2, 3)) for level in levels.values()]).sum(0)
        return self.proj(pooled)
'''
POOLED_CONFIG = '''
[tool.fx-lsp.modules."pooled:PooledLevels"]
inputs = {levels = "{'p3': float32[2, 4, 16, 16], 'p4': float32[2, 4, 8, 8]}"}
dynamic = {levels = {0 = "batch"}}
'''


def test_a_container_input_is_configured_as_python_spells_it(tmp_path: Path) -> None:
    # Nothing in forward says what `levels` holds: the configuration does.
    (tmp_path / "pooled.py").write_text(POOLED)
    (tmp_path / "pyproject.toml").write_text(POOLED_CONFIG)
    classes = checked_against_real_torch(tmp_path, ["pooled.py"])
    for module in classes["PooledLevels"].values():
        assert module["status"] == "traceable"
        assert (module["inputs"]["from"], module["inputs"]["tensors"]) == (
            "config", {"levels": "{'p3': float32[2, 4, 16, 16], 'p4': float32[2, 4, 8, 8]}"})
    completed = cli_support.fx_lsp("check", "--no-cache", "pooled.py", cwd=tmp_path)
    assert "dynamic.levels: a container input has no dynamic dimensions" in \
        completed.stdout + completed.stderr
