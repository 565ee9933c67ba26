"""Inputs the code already gives, before any guess (``fxcore.worker.inputs.given.declared``): a
Lightning-style ``example_input_array`` set in ``__init__``, a transformers-style
``dummy_inputs`` property, and a call of the class in the workspace's tests (read, never run),
each where no guess would fit (the forward refuses every size but the example's). Each
verdict compared with real torch.export (non-strict) and torch.compile on the CPU on real
tensors of the inputs found, in the same run (``library_verdicts.checked_against_real_torch``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from library_verdicts import checked_against_real_torch

NETS = '''import torch
import torch.nn.functional as F
from torch import nn


class WindowRegressor(nn.Module):
    def __init__(self, window: int = 30, features: int = 5, hidden: int = 16):
        super().__init__()
        self.example_input_array = torch.zeros(4, window, features)
        self.encoder = nn.Linear(features, hidden)
        self.out = nn.Linear(hidden, 1)

    def forward(self, x):
        if x.shape[1] != 30:
            raise ValueError("a window of 30 steps")
        return self.out(torch.relu(self.encoder(x)).mean(dim=1))


class TokenClassifier(nn.Module):
    def __init__(self, vocab: int = 50, hidden: int = 8):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.proj = nn.Linear(hidden, 3)

    @property
    def dummy_inputs(self):
        return {"input_ids": torch.randint(0, 50, (2, 7)),
                "attention_mask": torch.ones(2, 7, dtype=torch.long)}

    def forward(self, input_ids, attention_mask):
        if input_ids.shape[1] % 7:
            raise ValueError("sequences of 7 tokens")
        hidden = self.embed(input_ids) * attention_mask.unsqueeze(-1)
        return self.proj(hidden.sum(1))


class Patches(nn.Module):
    def __init__(self, channels: int = 3, width: int = 12):
        super().__init__()
        self.mix = nn.Linear(channels * 16, width)

    def forward(self, image):
        if image.shape[-1] != 48:
            raise ValueError("images of 48 by 48")
        return self.mix(F.unfold(image, 4, stride=4).transpose(1, 2))
'''

TEST_FILE = '''import torch

from nets import Patches

BATCH = 3


def test_patches():
    model = Patches()
    image = torch.randn(BATCH, 3, 48, 48)
    assert model(image).shape == (BATCH, 144, 12)
'''


@pytest.mark.slow
def test_examples_the_code_gives_come_before_any_guess(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "nets"\n')
    (tmp_path / "nets.py").write_text(NETS)
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_nets.py").write_text(TEST_FILE)
    classes = checked_against_real_torch(tmp_path, ["nets.py"])
    inputs = {name: by_mode["export"]["inputs"] for name, by_mode in classes.items()}
    assert all(by_mode["compile"]["inputs"] == inputs[name]
               for name, by_mode in classes.items())
    assert all(found["from"] == "example" for found in inputs.values())
    assert inputs["WindowRegressor"]["tensors"] == {"x": "float32[4, 30, 5]"}
    assert "from `example_input_array` of WindowRegressor" in inputs["WindowRegressor"]["note"]
    assert inputs["TokenClassifier"]["tensors"] == {"input_ids": "int64[2, 7]",
                                                    "attention_mask": "int64[2, 7]"}
    assert "from `dummy_inputs` of TokenClassifier" in inputs["TokenClassifier"]["note"]
    # The test's batch size read from the name it is set to.
    assert inputs["Patches"]["tensors"] == {"image": "float32[3, 3, 48, 48]"}
    assert "from the call of Patches in tests/test_nets.py:11" in inputs["Patches"]["note"]
