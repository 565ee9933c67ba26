"""Constructor arguments that a medical-imaging library's network blocks
(MONAI-like) need to get an export and compile verdict with no configuration, each verdict
compared with real torch.export (non-strict) and torch.compile on the CPU, on an instance
rebuilt from the JSON's arguments, in the same run
(``test_library_input_sources.checked_against_real_torch``): values the code names for
parameters the name table has none for (``fxcore.worker.building.code_values``): a ``Literal``
norm, an enum activation, the keys of the registry a norm name is looked up in two calls down
(its first key needing more arguments, so the next is taken), the strings an activation name is
compared with in a helper, the keys of a registry object (MONAI's ``LayerFactory``) a norm
name reaches through another block's class, a ``str | tuple`` norm whose default ``None`` the
helper cannot take, the values a docstring lists (Google and Sphinx style) where the code
builds the layer's name at run time; and a norm given literally in a factory's call whose
other arguments are not literals (``TraceJob.keyword_values``).

On the current main none of these classes gets a verdict of either mode.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest
from library_verdicts import checked_against_real_torch

from fxcore.worker.building.code_values import code_values
from fxcore.workspace.call_sites import build_index

# Real torch beside fx-lsp on whole workspaces, about 20 s: the slow tier.
pytestmark = pytest.mark.slow

BLOCKS = '''"""Network blocks written as a medical-imaging library writes them."""
from __future__ import annotations

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


class LayerFactory:
    """MONAI's: layers by upper-case name and spatial dimensions, ``Norm["instance", 2]``."""

    def __init__(self):
        self.components = {}

    def add(self, name, by_dims):
        self.components[name.upper()] = by_dims

    def __getitem__(self, key):
        name, dims = key
        return self.components[name.upper()][dims]


Norm = LayerFactory()
Norm.add("instance", {2: nn.InstanceNorm2d})
Norm.add("batch", {2: nn.BatchNorm2d})


def get_factory_norm(name, spatial_dims, channels):
    if name == "":
        return nn.Identity()
    return Norm[name, spatial_dims](channels)


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


class FactoryNormBlock(nn.Module):
    def __init__(self, spatial_dims, in_channels, out_channels, norm_name):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)
        self.norm = get_factory_norm(norm_name, spatial_dims, out_channels)

    def forward(self, x):
        return self.norm(self.conv(x))


class FactoryNormStage(nn.Module):
    def __init__(self, spatial_dims, in_channels, out_channels, norm_name):
        super().__init__()
        self.block = FactoryNormBlock(spatial_dims, in_channels, out_channels,
                                      norm_name=norm_name)
        self.head = nn.Conv2d(out_channels, 2, 1)

    def forward(self, x):
        return self.head(self.block(x))


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
    # A registry object's keys, read where the stage passes its norm on to the block's class
    # and the block to a helper; the helper's "" (no norm) comes last.
    assert kwargs["FactoryNormStage"]["norm_name"] == "'INSTANCE'"
    block = classes["FactoryNormBlock"]["export"]["arguments"]
    assert (block["from"], block["parent_from"], block["kwargs"]["norm_name"]) == (
        "parent", "guessed", "'INSTANCE'")
    assert all(by_mode["export"]["arguments"]["from"] == "guessed"
               for name, by_mode in classes.items() if name != "FactoryNormBlock")
    # A data-dependent branch on the block built so: the same failure as real torch's.
    assert [f["code"] for f in classes["RegistryNormBlock"]["export"]["failures"]] == ["FX401"]
    assert [f["code"] for f in classes["RegistryNormBlock"]["compile"]["failures"]] == \
        ["GB0170"]


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


def test_a_partly_literal_call_gives_its_literal_keywords_only(tmp_path: Path) -> None:
    (tmp_path / "factory.py").write_text(
        "def make(channels):\n"
        "    return Block(channels, norm='instance', act=pick(), depth=2)\n")
    index = build_index(str(tmp_path))
    # Not a call to build with: its first argument is not a literal.
    assert index.for_class("Block") is None
    assert index.keyword_values("Block") == {"norm": ("'instance'",), "depth": ("2",)}
