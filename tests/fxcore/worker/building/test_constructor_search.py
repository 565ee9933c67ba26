"""The constructor-argument search: classes whose constructor rejects the name table's guess get
values that make their own checks true (``raise``/``assert`` in ``__init__``, a rule stated in the
error), arguments of the kind their annotation or use says (a tuple for ``Sequence[int]``, a small
real module for ``nn.Module``, a torch module class for a ``block`` called with sizes), and a block
whose guessed instance fits no input gets one whose like arguments are equal. The solver alone,
then the real CLI on a small workspace."""

from __future__ import annotations

import ast
import json
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
import torch.nn.functional as F
from torch import nn

from fxcore.worker.building.annotation_values import (
    factory_values,
    init_calls,
    kind_fitted,
    sequence_element,
)
from fxcore.worker.building.check_solver import solutions
from fxcore.worker.building.init_checks import InitChecks, init_checks, message_rules

from cli_support import fx_lsp


class Equal(nn.Module):
    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        if in_channels != out_channels:
            raise ValueError("expecting in_channels == out_channels")


class Twice(nn.Module):
    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        assert in_channels == 2 * out_channels


class Chain(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, groups: int) -> None:
        super().__init__()
        if not (groups == in_channels == out_channels):
            raise ValueError("depthwise")


class Divides(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        inner = dim * 2
        assert inner % heads == 0 and dim % 48 == 0


class Sized(nn.Module):
    def __init__(self, input_dims: object) -> None:
        super().__init__()
        if not isinstance(input_dims, tuple) or len(input_dims) not in (2, 3):
            raise ValueError("input_dims must be (H, W) or (H, W, D)")


class Called(nn.Module):
    def __init__(self, block: Callable[..., nn.Module], in_channels: int, dim: int) -> None:
        super().__init__()
        self.a = block(in_channels, in_channels)
        self.b = block(in_channels, out_channels=in_channels)


def solved(cls: type, values: dict[str, object]) -> list[dict[str, object]]:
    checks = init_checks(cls)
    found = solutions(checks, values, {})
    for kwargs in found:  # each one makes the class's own checks true
        cls(**kwargs)
    return found


def test_the_solver_makes_the_checks_true_changing_as_little_as_it_can() -> None:
    assert solved(Equal, {"in_channels": 3, "out_channels": 16})[0] == {
        "in_channels": 16, "out_channels": 16}
    assert solved(Twice, {"in_channels": 3, "out_channels": 16})[0] == {
        "in_channels": 32, "out_channels": 16}
    assert solved(Chain, {"in_channels": 3, "out_channels": 16, "groups": 1})[0] == {
        "in_channels": 16, "out_channels": 16, "groups": 16}
    # Through a local (``inner = dim * 2``), with a constant of its own (48).
    assert solved(Divides, {"dim": 64, "heads": 5})[0]["dim"] % 48 == 0
    assert solved(Sized, {"input_dims": None})[0] == {"input_dims": (16, 16)}
    # Values that already pass need no search.
    assert solved(Equal, {"in_channels": 8, "out_channels": 8}) == []


def test_a_rule_the_error_states_is_solved_too() -> None:
    message = "num_channels (3) must be divisible by num_groups (32)"
    rules = message_rules(message, {"in_channels": 3, "out_channels": 16})
    assert [ast.unparse(rule) for rule in rules] == ["in_channels % 32 == 0"]
    found = solutions(InitChecks([], [], {}), {"in_channels": 3, "out_channels": 16}, {}, rules)
    assert found[0] == {"in_channels": 32, "out_channels": 16}
    named = message_rules("embed_dim must be divisible by num_heads", {"embed_dim": 64,
                                                                        "num_heads": 5})
    assert [ast.unparse(rule) for rule in named] == ["embed_dim % num_heads == 0"]


def test_unsafe_rules_are_not_kept() -> None:
    class Calls(nn.Module):
        def __init__(self, dim: int) -> None:
            super().__init__()
            assert print(dim) is None  # a call: never evaluated by the search
            assert self.training or dim > 0
            assert dim ** 10 ** 10 > 0

    assert init_checks(Calls).rules == []


def _check_depthwise(in_channels: int, out_channels: int, groups: int, bias: bool = True) -> None:
    if not (groups == in_channels == out_channels):
        raise ValueError("depthwise only")
    if not bias:
        raise ValueError("needs a bias")


class DepthwiseBase(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, groups: int) -> None:
        super().__init__()
        if not (groups == in_channels == out_channels):
            raise ValueError("depthwise only")


class DepthwiseChild(DepthwiseBase):
    """The check is the base's: reached through ``super().__init__`` with renamed arguments."""

    def __init__(self, channels_in: int, channels_out: int, groups: int = 1) -> None:
        super().__init__(channels_in, out_channels=channels_out, groups=groups)


class DepthwiseNamedBase(DepthwiseBase):
    """The same, through ``Base.__init__(self, ...)``, with a constant the base checks."""

    def __init__(self, width: int) -> None:
        DepthwiseBase.__init__(self, width, width, 4)


class DepthwiseHelper(nn.Module):
    """The check is a module-level helper's; its ``bias`` default makes its second rule true."""

    def __init__(self, in_channels: int, out_channels: int, groups: int) -> None:
        super().__init__()
        _check_depthwise(in_channels, out_channels, groups)
        self.conv = nn.Conv2d(in_channels, out_channels, 3, groups=groups)


class Levels(nn.Module):
    """A tuple indexed by another tuple's values, and one by ``range(len(...))``."""

    def __init__(self, levels: tuple[int, ...], channels: tuple[int, ...],
                 widths: tuple[int, ...]) -> None:
        super().__init__()
        self.convs = nn.ModuleList([nn.Conv2d(channels[d], 8, 1) for d in levels])
        for i in range(len(channels)):
            self.convs.append(nn.Conv2d(widths[i], 8, 1))


class Nested(nn.Module):
    """A rule nested in an ``if`` holds only where that ``if``'s test does."""

    def __init__(self, padding: object, in_channels: int, out_channels: int) -> None:
        super().__init__()
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise ValueError(padding)
            self.mode = padding
        if in_channels != out_channels:
            raise ValueError("expecting in_channels == out_channels")


class GroupedConv(nn.Conv2d):
    """torch's own checks (``_ConvNd``: ``in_channels % groups``), two ``__init__``s up."""

    def __init__(self, in_channels: int, out_channels: int, groups: int) -> None:
        super().__init__(in_channels, out_channels, 3, groups=groups)

def test_the_checks_of_bases_and_helpers_the_constructor_calls_are_solved() -> None:
    assert solved(DepthwiseChild, {"channels_in": 3, "channels_out": 16, "groups": 1})[0] == {
        "channels_in": 16, "channels_out": 16, "groups": 16}
    assert solved(DepthwiseNamedBase, {"width": 3})[0] == {"width": 4}
    assert solved(DepthwiseHelper, {"in_channels": 3, "out_channels": 16, "groups": 1})[0] == {
        "in_channels": 16, "out_channels": 16, "groups": 16}
    grouped = solved(GroupedConv, {"in_channels": 3, "out_channels": 16, "groups": 2})[0]
    assert grouped["in_channels"] % grouped["groups"] == 0
    assert grouped["out_channels"] % grouped["groups"] == 0


def test_a_tuple_indexed_by_another_gets_the_length_its_indices_need() -> None:
    found = solved(Levels, {"levels": (16, 32), "channels": (3, 6), "widths": (8,)})[0]
    assert found == {"levels": (0, 1), "channels": (3, 6), "widths": (8, 8)}


def test_a_nested_rule_applies_only_under_its_test() -> None:
    # An int is never checked against the strings: the other rule alone is solved.
    assert solved(Nested, {"padding": 1, "in_channels": 3, "out_channels": 16})[0] == {
        "padding": 1, "in_channels": 16, "out_channels": 16}


def test_annotations_and_calls_give_the_kind_of_value() -> None:
    assert sequence_element(Sequence[int]) == (int, False)
    assert sequence_element(tuple[int, ...]) == (int, False)
    assert sequence_element(Sequence[int] | int) == (int, True)
    assert sequence_element(int) is None
    calls = init_calls(Called)
    assert list(calls) == ["block"]
    factories = factory_values(calls["block"], {"in_channels": 3})
    first = factories[0](3, out_channels=3)
    assert isinstance(first, nn.Conv2d) and first.kernel_size == (1, 1)
    assert factories[-1] is nn.Identity
    fitted = kind_fitted(Called, {"block": None, "in_channels": 3, "dim": 64},
                         {"block": Callable[..., nn.Module], "in_channels": int, "dim": int})
    assert list(fitted) == ["block"]
    activation = kind_fitted(Equal, {"act": None, "names": None},
                             {"act": Callable, "names": Sequence[str]})
    assert activation == {"act": [F.relu]}  # a function of tensors; strings: not made here


WORKSPACE = '''
from collections.abc import Callable, Sequence

import torch.nn.functional as F
from torch import nn


class Residual(nn.Module):
    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        if in_channels != out_channels:
            raise ValueError("expecting in_channels == out_channels")
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        return x + self.conv(x)


class UpBlock(nn.Module):
    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        assert in_channels == 2 * out_channels, "in_channels must be twice out_channels"
        self.conv = nn.Conv2d(in_channels, out_channels, 1)

    def forward(self, x):
        return F.interpolate(self.conv(x), scale_factor=2)


class Depthwise(nn.Module):
    def __init__(self, in_channels: int, out_channels: int, groups: int):
        super().__init__()
        if not (groups == in_channels == out_channels):
            raise ValueError("depthwise needs groups == in_channels == out_channels")
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1, groups=groups)

    def forward(self, x):
        return self.conv(x)


class GroupNormed(nn.Module):
    def __init__(self, in_channels: int):
        super().__init__()
        self.norm = nn.GroupNorm(32, in_channels)

    def forward(self, x):
        return self.norm(x)


class Dims(nn.Module):
    def __init__(self, input_dims):
        super().__init__()
        if not isinstance(input_dims, tuple) or len(input_dims) not in (2, 3):
            raise ValueError("input_dims must be (H, W) or (H, W, D)")
        self.lin = nn.Linear(input_dims[-1], 8)

    def forward(self, x):
        return self.lin(x)


class AddBlock(nn.Module):
    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, 3, padding=1)

    def forward(self, x):
        return x + self.conv(x)


class Stack(nn.Module):
    def __init__(self, channels: Sequence[int]):
        super().__init__()
        self.convs = nn.ModuleList(nn.Conv2d(a, b, 3, padding=1)
                                   for a, b in zip(channels[:-1], channels[1:]))

    def forward(self, x):
        for conv in self.convs:
            x = conv(x)
        return x


class Wrapper(nn.Module):
    def __init__(self, module: nn.Module):
        super().__init__()
        self.module = module

    def forward(self, x):
        return self.module(x) + 1


class Branches(nn.Module):
    def __init__(self, block: Callable[..., nn.Module], in_channels: int, out_channels: int):
        super().__init__()
        self.a = block(in_channels, out_channels)
        self.b = block(in_channels, out_channels)

    def forward(self, x):
        return self.a(x) + self.b(x)


class Impossible(nn.Module):
    def __init__(self, in_channels: int, out_channels: int):
        super().__init__()
        if in_channels > 0 or out_channels > 0:
            raise ValueError("never built")

    def forward(self, x):
        return x
'''

#: What each class's instance must satisfy, on its JSON ``arguments`` (Python source).
CHECKS: dict[str, Callable[[dict[str, object]], bool]] = {
    "Residual": lambda a: a["in_channels"] == a["out_channels"],
    "UpBlock": lambda a: a["in_channels"] == 2 * a["out_channels"],  # type: ignore[operator]
    "Depthwise": lambda a: a["groups"] == a["in_channels"] == a["out_channels"],
    "GroupNormed": lambda a: a["in_channels"] % 32 == 0,  # type: ignore[operator]
    "Dims": lambda a: isinstance(a["input_dims"], tuple) and len(a["input_dims"]) in (2, 3),
    "AddBlock": lambda a: a["in_channels"] == a["out_channels"],
    "Stack": lambda a: isinstance(a["channels"], tuple),
    "Wrapper": lambda a: "Linear" in str(a["module"]) or "Conv" in str(a["module"]),
    "Branches": lambda a: "Conv2d" in str(a["block"]),
}


def _values(kwargs: dict[str, str]) -> dict[str, object]:
    """The JSON's argument sources as values: literals evaluated, module sources kept."""
    values: dict[str, object] = {}
    for name, source in kwargs.items():
        try:
            values[name] = ast.literal_eval(source)
        except ValueError:
            values[name] = source
    return values


def test_each_class_gets_a_verdict_on_arguments_its_checks_accept(tmp_path: Path) -> None:
    (tmp_path / "blocks.py").write_text(textwrap.dedent(WORKSPACE))
    completed = fx_lsp("check", "--no-cache", "--output-format", "json", "blocks.py",
                       cwd=tmp_path)
    modules = {module["class"]: module for module in json.loads(completed.stdout)["modules"]}
    for name, check in CHECKS.items():
        module = modules[name]
        assert module["status"] == "traceable", (name, module)
        assert check(_values(module["arguments"]["kwargs"])), (name, module["arguments"])
    # The sets the constructor rejected are named on the verdict, and on a class nothing
    # satisfies, in its FX103 reason.
    assert any("Residual(in_channels=3, out_channels=16): ValueError: expecting" in note
               for note in modules["Residual"]["capture_notes"])
    assert any("AddBlock(in_channels=3, out_channels=16): shapes do not fit" in note
               for note in modules["AddBlock"]["capture_notes"])
    impossible = modules["Impossible"]
    assert impossible["status"] == "not-traced"
    assert "Argument sets tried: Impossible(in_channels=3, out_channels=16): ValueError: " \
        "never built; " in impossible["reason"]
    assert "Impossible(in_channels=16, out_channels=16)" in impossible["reason"]


@pytest.mark.slow  # real torch.export and torch.compile, twice each
def test_export_and_compile_verdicts_agree_with_real_torch(tmp_path: Path) -> None:
    from library_verdicts import checked_against_real_torch

    source = textwrap.dedent(WORKSPACE)
    (tmp_path / "blocks.py").write_text(source[:source.index("class Impossible")])
    classes = checked_against_real_torch(tmp_path, ["blocks.py"])
    assert set(CHECKS) <= set(classes)
