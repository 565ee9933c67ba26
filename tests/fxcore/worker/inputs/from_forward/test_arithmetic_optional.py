"""Optional arguments ``forward`` uses untested only in arithmetic
(``fxcore.worker.inputs.arithmetic_uses``): a default None there raises on every input, so
each gets a value sized from that use: a tensor broadcastable with the layer output it is
combined with (``h * scale`` after a Linear: ``[1, out_features]``; ``y - shift`` after a
convolution: ``[1, C, 1, 1]``), a number where it is combined with numbers only
(``temperature * 0.5 + 1.0``). fx-lsp's export and compile verdicts are compared with real
torch on the CPU on the inputs it found, and each class runs eagerly on inputs a user writes.

On the branch's base ``ScaledBranch`` had no example inputs ("unsupported operand type(s) for
*: 'Tensor' and 'NoneType'"), so no verdict where real torch.export fails on its branch; the
others got tensors of shapes no user writes (``temperature`` a ``[2, 16, 2, 10]`` tensor).
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest
import torch
from forked_answer import forked_answer
from library_verdicts import checked_against_real_torch
from torch import nn

from fxcore.worker.inputs.from_forward.arithmetic_uses import arithmetic_use

BLOCKS = '''"""Blocks whose optional arguments forward uses in arithmetic."""
from torch import nn


class ScaledBranch(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x, scale=None):
        h = self.fc(x)
        if h.sum() > 0:
            h = h * 2
        return h * scale


class Shifted(nn.Module):
    def __init__(self, channels: int = 8):
        super().__init__()
        self.conv = nn.Conv2d(3, channels, 3, padding=1)

    def forward(self, x, shift=None):
        y = self.conv(x)
        y = y - shift * 2
        return y.relu()


class Tempered(nn.Module):
    def __init__(self, dim: int = 16):
        super().__init__()
        self.fc = nn.Linear(dim, 10)

    def forward(self, x, temperature=None):
        t = temperature * 0.5 + 1.0
        return self.fc(x) / t
'''

#: Per class: the inputs a user writes, as source evaluated with ``torch`` in scope.
BY_HAND = {
    "ScaledBranch": "(torch.randn(4, 5, 16), torch.full((16,), 0.5))",
    "Shifted": "(torch.randn(1, 3, 12, 12), torch.randn(8, 1, 1))",
    "Tempered": "(torch.randn(3, 16), 2.0)",
}


@pytest.mark.slow
def test_optional_arguments_used_in_arithmetic_get_values_real_torch_agrees_with(
        tmp_path: Path) -> None:
    (tmp_path / "blocks.py").write_text(BLOCKS)
    classes = checked_against_real_torch(tmp_path, ["blocks.py"])
    for mode in ("export", "compile"):
        branch = classes["ScaledBranch"][mode]
        assert branch["inputs"]["tensors"] == {"x": "float32[2, 8, 16]",
                                               "scale": "float32[1, 16]"}, branch["inputs"]
        assert "sized from its use by `h * scale`" in branch["inputs"]["note"]
        assert branch["status"] == "failed", branch
        assert classes["Shifted"][mode]["inputs"]["tensors"]["shift"] == "float32[1, 8, 1, 1]"
        assert classes["Shifted"][mode]["status"] == "traceable"
        tempered = classes["Tempered"][mode]["inputs"]
        assert "temperature" not in tempered["tensors"], tempered
        assert tempered["values"] == {"temperature": "1.0"}, tempered
    assert [failure["code"] for failure in classes["ScaledBranch"]["export"]["failures"]] \
        == ["FX401"]

    def by_hand() -> dict[str, list[int]]:
        spec = importlib.util.spec_from_file_location("blocks", tmp_path / "blocks.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return {name: list(getattr(module, name)()(*eval(inputs, {"torch": torch})).shape)
                for name, inputs in BY_HAND.items()}

    assert forked_answer(by_hand, "the blocks on inputs a user writes") == {
        "ScaledBranch": [4, 5, 16], "Shifted": [1, 8, 12, 12], "Tempered": [3, 10]}


class _Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 6)
        self.embed = nn.Embedding(10, 5)


@pytest.mark.parametrize(("source", "expected"), [
    ("h = self.fc(x)\nreturn h + bias * 2", ("float32[1, 6]", "h + bias * 2")),
    ("return -bias + self.embed(x)", ("float32[1, 5]", "-bias + self.embed(x)")),
    ("x += bias\nreturn x", ("float32[]", "x += bias")),
    ("t = bias * 0.5 + 1\nreturn x / t", (None, "bias * 0.5 + 1")),
    ("return x.view(-1, x.shape[-1] * bias)", (None, "x.shape[-1] * bias")),
    ("return self.fc(bias)", None),
])
def test_the_first_arithmetic_use_sizes_the_argument(source, expected) -> None:
    body = "\n".join(f"    {line}" for line in source.splitlines())
    tree = ast.parse(f"def forward(self, x, bias=None):\n{body}\n")
    used = arithmetic_use(tree, _Block(), "bias")
    assert (None if used is None else
            (None if used.spec is None else str(used.spec), used.use)) == expected
