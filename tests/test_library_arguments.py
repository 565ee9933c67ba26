"""Issue 40, item 7: what a medical-imaging library's network blocks (MONAI-like) need to get an
export and compile verdict with no configuration, each verdict compared with real
torch.export (non-strict) and torch.compile on the CPU, on an instance rebuilt from the JSON's
arguments and real tensors of its inputs, in the same run
(``test_library_input_sources.checked_against_real_torch``):

- constructor values the code names for parameters the name table has none for
  (``fxcore.worker.building.code_values``): a ``Literal`` norm, an enum activation, the keys of
  the registry a norm name is looked up in two calls down (its first key needing more
  arguments, so the next is taken), the strings an activation name is compared with in a
  helper, a ``str | tuple`` norm whose default ``None`` the helper cannot take, the values a
  docstring lists, a norm given literally in a factory's call whose other arguments are not
  literals (Google and Sphinx style) where the code builds the
  layer's name at run time;
- ``forward`` arguments that are containers of tensors (``fxcore.worker.container_inputs``): a
  feature pyramid's ``dict[str, Tensor]`` indexed like its ``ModuleDict``, whose levels must
  halve; an unannotated dict indexed with strings; a ``list[Tensor]``, a ``tuple[Tensor, ...]``
  and a ``Sequence[Tensor]`` zipped with a ``ModuleList``; a list a parent passes its
  submodule, whose own code says nothing of it; a dict configured as Python spells it.

On the current main none of these classes gets a verdict of either mode.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest
from test_library_input_sources import checked_against_real_torch

from fxcore.model.container_spec import parse_input
from fxcore.worker.building.code_values import code_values
from fxcore.workspace.call_sites import build_index

import cli_support

BLOCKS = '''"""Network blocks written as a medical-imaging library writes them."""
from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Literal

import torch
import torch.nn.functional as F
from torch import nn


class Act(str, Enum):
    RELU = "relu"
    GELU = "gelu"


ACTIVATIONS = {Act.RELU: nn.ReLU, Act.GELU: nn.GELU}

NORMS = {"group": nn.GroupNorm, "batch": nn.BatchNorm2d, "instance": nn.InstanceNorm2d}


def split_args(args):
    if isinstance(args, str):
        return args, {}
    name, kwargs = args
    return name, dict(kwargs)


def get_norm_layer(name, channels):
    norm_name, norm_args = split_args(name)
    norm_type = NORMS[norm_name.lower()]
    if norm_type is nn.GroupNorm:
        return norm_type(num_channels=channels, **norm_args)
    return norm_type(channels, **norm_args)


def get_act_layer(name):
    if name == "prelu":
        return nn.PReLU()
    elif name == "leakyrelu":
        return nn.LeakyReLU(0.1)
    raise ValueError(f"unsupported activation {name}")


class LiteralNormConv(nn.Module):
    def __init__(self, in_channels: int, out_channels: int,
                 norm: Literal["batch", "instance"]):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        if norm == "batch":
            self.norm = nn.BatchNorm2d(out_channels)
        elif norm == "instance":
            self.norm = nn.InstanceNorm2d(out_channels)
        else:
            raise ValueError(f"unknown norm {norm}")

    def forward(self, x):
        return torch.relu(self.norm(self.conv(x)))


class EnumActBlock(nn.Module):
    def __init__(self, channels: int, act: Act):
        super().__init__()
        self.proj = nn.Linear(channels, channels)
        self.act = ACTIVATIONS[act]()

    def forward(self, x):
        return self.act(self.proj(x))


class RegistryNormBlock(nn.Module):
    def __init__(self, spatial_dims: int, in_channels: int, out_channels: int,
                 norm_name: str | tuple):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.norm = get_norm_layer(norm_name, out_channels)

    def forward(self, x):
        out = self.norm(self.conv(x))
        if out.mean() > 0:
            return out
        return -out


class OptionalNormBlock(nn.Module):
    def __init__(self, channels: int = 8, norm: str | tuple | None = None):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.norm = get_norm_layer(norm, channels)

    def forward(self, x):
        return self.norm(self.conv(x))


class UnetResBlock(nn.Module):
    def __init__(self, spatial_dims: int, in_channels: int, out_channels: int,
                 norm_name: str | tuple):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.norm = get_norm_layer(norm_name, out_channels)
        self.skip = nn.Conv2d(in_channels, out_channels, 1)

    def forward(self, x):
        return torch.relu(self.norm(self.conv(x)) + self.skip(x))


class ChainActBlock(nn.Module):
    def __init__(self, in_channels, out_channels, act_name):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 1)
        self.act = get_act_layer(act_name)

    def forward(self, x):
        return self.act(self.conv(x))


class DocNormBlock(nn.Module):
    """A convolution and a norm.

    Args:
        channels: number of channels.
        norm_type: the normalisation, one of ``"batch"`` or ``"instance"``.
    """

    def __init__(self, channels, norm_type):
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1)
        self.norm = getattr(nn, f"{norm_type.capitalize()}Norm2d")(channels)

    def forward(self, x):
        return self.norm(self.conv(x)) + x


class ParamDocAct(nn.Module):
    def __init__(self, dim, mode):
        """A gated projection.

        :param dim: the features.
        :param mode: one of 'sigmoid', 'tanh'.
        """
        super().__init__()
        self.proj = nn.Linear(dim, 2 * dim)
        self.gate = getattr(torch, mode)

    def forward(self, x):
        value, gate = self.proj(x).chunk(2, dim=-1)
        return value * self.gate(gate)


'''

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


FACTORIES = '''
from netblocks import UnetResBlock


def make_stage(spatial_dims, channels):
    return UnetResBlock(spatial_dims, channels, channels, norm_name=("group", {"num_groups": 8}))
'''


def test_constructor_values_are_read_from_the_code(tmp_path: Path) -> None:
    (tmp_path / "netblocks.py").write_text(BLOCKS)
    (tmp_path / "factories.py").write_text(FACTORIES)
    classes = checked_against_real_torch(tmp_path, ["netblocks.py"])
    kwargs = {name: by_mode["export"]["arguments"]["kwargs"] for name, by_mode in classes.items()}
    assert kwargs["LiteralNormConv"]["norm"] == "'batch'"
    assert kwargs["EnumActBlock"]["act"] == "__import__('netblocks', fromlist=['_']).Act.RELU"
    # The registry's first key, "group", needs num_groups too: its next key builds.
    assert kwargs["RegistryNormBlock"]["norm_name"] == "'batch'"
    assert kwargs["ChainActBlock"]["act_name"] == "'prelu'"
    # A factory's call is not all literals, but its norm is: taken before the code's values.
    assert kwargs["UnetResBlock"]["norm_name"] == "('group', {'num_groups': 8})"
    # Its default None builds nothing the helper takes: the registry's keys, as above.
    assert kwargs["OptionalNormBlock"] == {"norm": "'batch'"}
    assert kwargs["DocNormBlock"]["norm_type"] == "'batch'"
    assert kwargs["ParamDocAct"]["mode"] == "'sigmoid'"
    assert all(by_mode["export"]["arguments"]["from"] == "guessed"
               for by_mode in classes.values())
    # A data-dependent branch on the block built so: the same failure as real torch's.
    assert [f["code"] for f in classes["RegistryNormBlock"]["export"]["failures"]] == ["FX401"]
    assert [f["code"] for f in classes["RegistryNormBlock"]["compile"]["failures"]] == \
        ["GB0170"]


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


NORMS = {"layer": None, "rms": None}


class _Documented:
    """A block.

    Args:
        kind (str): ``"a"`` or ``"b"``.
        other: a number.
    """

    def __init__(self, kind, norm: Literal["x", "y"] | None, table_key, compared):
        """:param compared: one of 'p', 'q'."""
        if compared in ("u", "v"):
            pass
        self.norm = NORMS.get(table_key)


def test_the_values_a_class_names_for_its_parameters() -> None:
    assert code_values(_Documented, "kind", None) == ["a", "b"]
    assert code_values(_Documented, "norm", Literal["x", "y"] | None) == ["x", "y"]
    assert code_values(_Documented, "table_key", None) == ["layer", "rms"]
    # The code's strings before the docstring's.
    assert code_values(_Documented, "compared", None) == ["u", "v", "p"]
    assert code_values(_Documented, "other", None) == []


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


def test_a_partly_literal_call_gives_its_literal_keywords_only(tmp_path: Path) -> None:
    (tmp_path / "factory.py").write_text(
        "def make(channels):\n"
        "    return Block(channels, norm='instance', act=pick(), depth=2)\n")
    index = build_index(str(tmp_path))
    # Not a call to build with: its first argument is not a literal.
    assert index.for_class("Block") is None
    assert index.keyword_values("Block") == {"norm": ("'instance'",), "depth": ("2",)}
