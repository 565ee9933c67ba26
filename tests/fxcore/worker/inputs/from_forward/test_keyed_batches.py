"""A dict argument read by string keys, as a forecasting model reads its batch
(``fxcore.worker.inputs.from_forward.keyed_batch``): each key's value followed to the layer it
reaches through local names, a ``permute`` before a ``Conv1d`` (the batch laid out ``[batch, length,
channels]``) and a ``cat`` with another key; keys read only where present tried present, then
left out; a value a ``Linear`` takes also as a batch of vectors; an argument annotated
``dict`` beside a tensor given a dict, not a tensor. Each verdict compared with
real torch.export (non-strict) and torch.compile on the CPU on real tensors of the inputs
found, in the same run (``library_verdicts.checked_against_real_torch``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from library_verdicts import checked_against_real_torch

BATCHES = '''import torch
from torch import nn


class ScaledFeedForward(nn.Module):
    def __init__(self, context_length: int = 24, prediction_length: int = 6, hidden: int = 16):
        super().__init__()
        self.encoder = nn.Linear(context_length, hidden)
        self.head = nn.Linear(hidden, prediction_length)

    def forward(self, batch):
        past = batch["past_target"]
        scale = past.abs().mean(dim=1, keepdim=True) + 1.0
        return self.head(torch.relu(self.encoder(past / scale))) * scale


class StaticCategories(nn.Module):
    def __init__(self, context_length: int = 24, cardinality: int = 5, hidden: int = 16):
        super().__init__()
        self.encoder = nn.Linear(context_length, hidden)
        self.embed = nn.Embedding(cardinality, hidden)

    def forward(self, batch: dict[str, torch.Tensor]):
        hidden = self.encoder(batch["past_target"])
        if batch.get("feat_static_cat") is not None:
            hidden = hidden + self.embed(batch["feat_static_cat"]).sum(dim=1)
        return hidden


class TimeConvolution(nn.Module):
    def __init__(self, channels: int = 3, hidden: int = 8):
        super().__init__()
        self.conv = nn.Conv1d(channels, hidden, 3, padding=1)

    def forward(self, x: dict):
        values = x["past_values"].permute(0, 2, 1)
        out = self.conv(values).transpose(1, 2)
        if "mask" in x:
            out = out * x["mask"]
        return out


class ObservedConcat(nn.Module):
    def __init__(self, channels: int = 4, hidden: int = 8):
        super().__init__()
        self.proj = nn.Linear(2 * channels, hidden)

    def forward(self, data: dict[str, torch.Tensor]):
        stacked = torch.cat([data["past_target"], data["past_observed"]], dim=-1)
        return self.proj(stacked)


class ConditionedHead(nn.Module):
    def __init__(self, features: int = 6, hidden: int = 8):
        super().__init__()
        self.proj = nn.Linear(features, hidden)
        self.cond = nn.Linear(3, hidden)

    def forward(self, x, conditions: dict):
        out = self.proj(x)
        for name, value in conditions.items():
            out = out + self.cond(value)
        return out
'''


def _inputs(tmp_path: Path, classes: tuple[str, ...]) -> dict[str, dict]:
    """The export inputs of ``classes`` of ``BATCHES``, each verdict checked against real
    torch, compile's inputs the same."""
    parts = BATCHES.split("\n\n\nclass ")
    chosen = [part for part in parts[1:] if part.split("(")[0] in classes]
    (tmp_path / "batches.py").write_text("\n\n\nclass ".join([parts[0], *chosen]))
    checked = checked_against_real_torch(tmp_path, ["batches.py"])
    assert all(by_mode["compile"]["inputs"] == by_mode["export"]["inputs"]
               for by_mode in checked.values())
    return {name: by_mode["export"]["inputs"] for name, by_mode in checked.items()}


@pytest.mark.slow
def test_each_key_gets_the_shape_of_the_layer_its_value_reaches(tmp_path: Path) -> None:
    inputs = _inputs(tmp_path, ("ScaledFeedForward", "ObservedConcat"))
    # Scaled by its mean over time then fed to a Linear: a batch of series, not of sequences.
    assert inputs["ScaledFeedForward"]["tensors"] == {
        "batch": "{'past_target': float32[2, 24]}"}
    # Two keys concatenated before one Linear share its width.
    assert inputs["ObservedConcat"]["tensors"] == {
        "data": "{'past_target': float32[2, 8, 4], 'past_observed': float32[2, 8, 4]}"}


@pytest.mark.slow
def test_keys_read_only_where_present_are_tried_present_then_left_out(
        tmp_path: Path) -> None:
    inputs = _inputs(tmp_path, ("StaticCategories", "TimeConvolution"))
    # The optional key present where the model runs with it: embedded as integer indices.
    assert inputs["StaticCategories"]["tensors"] == {
        "batch": "{'past_target': float32[2, 24], 'feat_static_cat': int64[2, 8]}"}
    # Permuted before the convolution: laid out [batch, length, channels]; the mask, which
    # fits no shape the code says, left out as the code allows.
    assert inputs["TimeConvolution"]["tensors"] == {"x": "{'past_values': float32[2, 32, 3]}"}
    assert "the keys it reads only where present left out: 'mask'" \
        in inputs["TimeConvolution"]["note"]


@pytest.mark.slow
def test_an_argument_annotated_dict_beside_a_tensor_gets_a_dict(tmp_path: Path) -> None:
    inputs = _inputs(tmp_path, ("ConditionedHead",))
    # Each value of the iterated dict as the Linear that takes it; the tensor beside it as
    # the Linear it reaches.
    assert inputs["ConditionedHead"]["tensors"] == {
        "x": "float32[2, 8, 6]",
        "conditions": "{'0': float32[2, 8, 3], '1': float32[2, 8, 3]}"}
