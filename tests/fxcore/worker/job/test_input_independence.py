"""Whether an error would be raised whatever the inputs, read from the failing lines: each
spelling is run for real (real torch, on inputs written here) and the error it raises is
judged; the classes that are the inputs' fault are run again on inputs that work."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path
from types import ModuleType

import pytest
import torch

from fxcore.worker.job.input_independence import raised_whatever_the_inputs

SOURCE = '''
import math

import torch
from torch import nn


class Flagged(nn.Module):
    def __init__(self, enabled=False):
        super().__init__()
        self.enabled = enabled

    def forward(self, x):
        if not self.enabled:
            raise NotImplementedError("build it with enabled=True")
        return x


class FlagInHelper(nn.Module):
    def __init__(self, kind="blackman"):
        super().__init__()
        self.kind = kind

    def window(self):
        if self.kind != "hann":
            raise ValueError(self.kind)
        return torch.hann_window(4)

    def forward(self, x):
        y = x * 2
        return y * self.window()


class MissingFunction(nn.Module):
    def forward(self, x):
        scale = math.blackmanharris(4)
        return x * scale


class Unpacked(nn.Module):
    def forward(self, x):
        b, n, d = x.shape
        return x.reshape(b, n * d)


class UnpackedLater(nn.Module):
    def forward(self, x):
        shape = x.shape
        b, n, d = shape
        return x.reshape(b, n * d)


class RaisesOnShape(nn.Module):
    def forward(self, x):
        if x.dim() != 3:
            raise ValueError("give (batch, steps, features)")
        return x


class RaisesInLoop(nn.Module):
    def __init__(self):
        super().__init__()
        self.table = {"a": 1}

    def forward(self, keys):
        for key in keys:
            self.table[key]
        return keys


class TopKNone(nn.Module):
    def __init__(self, top_k=None):
        super().__init__()
        self.top_k = top_k

    def forward(self, logits):
        return torch.topk(logits, self.top_k, dim=-1).values


class ConditionalExpression(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = torch.ones(4, 2)

    def forward(self, x, pos=None):
        rows = self.cache[:2] if pos is None else self.cache[pos]
        return rows
'''

#: Each class, the inputs that make it raise, whether no input could change that, and (for
#: the inputs' fault) inputs a user would write on which it runs.
CASES = [
    ("Flagged", {"x": torch.ones(2, 3)}, True, None),
    ("FlagInHelper", {"x": torch.ones(4)}, True, None),
    ("MissingFunction", {"x": torch.ones(2)}, True, None),
    ("Unpacked", {"x": torch.ones(2, 3)}, False, {"x": torch.ones(2, 3, 4)}),
    ("UnpackedLater", {"x": torch.ones(2, 3)}, False, {"x": torch.ones(2, 3, 4)}),
    ("RaisesOnShape", {"x": torch.ones(2)}, False, {"x": torch.ones(2, 3, 4)}),
    ("RaisesInLoop", {"keys": ["b"]}, False, {"keys": ["a"]}),
    ("TopKNone", {"logits": torch.ones(2, 4)}, False, None),
    ("ConditionalExpression", {"x": torch.ones(1), "pos": torch.tensor([9])}, False,
     {"x": torch.ones(1), "pos": torch.tensor([1])}),
]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> ModuleType:
    path: Path = tmp_path_factory.mktemp("independence") / "independence_corpus.py"
    path.write_text(textwrap.dedent(SOURCE).lstrip())
    spec = importlib.util.spec_from_file_location("independence_corpus", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("name", "inputs", "independent", "runs_on"), CASES,
                         ids=[case[0] for case in CASES])
def test_an_error_is_the_class_s_only_where_no_input_changes_it(
        corpus: ModuleType, name: str, inputs: dict, independent: bool,
        runs_on: dict | None) -> None:
    model = getattr(corpus, name)()
    with pytest.raises(Exception) as raised:
        model(**inputs)
    assert raised_whatever_the_inputs(raised.value) is independent
    if runs_on is not None:
        model(**runs_on)  # real torch runs it on inputs a user would write


def test_an_error_whose_source_cannot_be_read_is_never_the_class_s() -> None:
    namespace: dict = {}
    exec("def forward():\n    raise ValueError('made at run time')\n", namespace)
    with pytest.raises(ValueError) as raised:
        namespace["forward"]()
    assert raised_whatever_the_inputs(raised.value) is False
