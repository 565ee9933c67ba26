"""The claim ``fxcore.worker.module_modes.judging`` rests on, against real torch: torch's own layers
that read ``training`` (``torch.nn.modules``: dropout, batch and instance norm, RReLU, the RNNs,
attention and transformer layers) compute differently in train and eval mode but are captured
the same in both: ``torch.compile`` (as fx-lsp runs it, under ``no_grad``, and with gradients)
meets the same graphs and breaks, ``fullgraph=True`` and ``torch.export`` the same verdict. So
a class where nothing else reads ``training`` is compiled once. Every such class of this
torch's ``torch.nn`` must have a case here: a new one fails the test until it is checked.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable
from typing import Any

import pytest
import torch
import torch._dynamo
from torch import nn

from fxcore.worker.module_modes.judging import class_reads

pytestmark = [pytest.mark.slow, pytest.mark.matrix]

ENCODER_LAYER: dict[str, Any] = {"d_model": 8, "nhead": 2, "dim_feedforward": 16,
                                 "batch_first": True}
RNN: dict[str, Any] = {"input_size": 8, "hidden_size": 8, "num_layers": 2, "dropout": 0.2,
                       "batch_first": True}
#: Each class: how to build one, and the shape of its input.
CASES: dict[str, tuple[Callable[[], nn.Module], tuple[int, ...]]] = {
    "Dropout": (lambda: nn.Dropout(0.2), (2, 4, 8)),
    "Dropout1d": (lambda: nn.Dropout1d(0.2), (2, 4, 8)),
    "Dropout2d": (lambda: nn.Dropout2d(0.2), (2, 4, 8, 8)),
    "Dropout3d": (lambda: nn.Dropout3d(0.2), (2, 4, 4, 4, 4)),
    "AlphaDropout": (lambda: nn.AlphaDropout(0.2), (2, 4, 8)),
    "FeatureAlphaDropout": (lambda: nn.FeatureAlphaDropout(0.2), (2, 4, 8, 8)),
    "BatchNorm1d": (lambda: nn.BatchNorm1d(4), (2, 4, 8)),
    "BatchNorm2d": (lambda: nn.BatchNorm2d(4, track_running_stats=False), (2, 4, 8, 8)),
    "BatchNorm3d": (lambda: nn.BatchNorm3d(4), (2, 4, 4, 4, 4)),
    "LazyBatchNorm1d": (lambda: nn.LazyBatchNorm1d(), (2, 4, 8)),
    "LazyBatchNorm2d": (lambda: nn.LazyBatchNorm2d(), (2, 4, 8, 8)),
    "LazyBatchNorm3d": (lambda: nn.LazyBatchNorm3d(), (2, 4, 4, 4, 4)),
    # On the CPU without a process group it runs as BatchNorm does.
    "SyncBatchNorm": (lambda: nn.SyncBatchNorm(4), (2, 4, 8, 8)),
    "InstanceNorm1d": (lambda: nn.InstanceNorm1d(4, track_running_stats=True), (2, 4, 8)),
    "InstanceNorm2d": (lambda: nn.InstanceNorm2d(4, affine=True), (2, 4, 8, 8)),
    "InstanceNorm3d": (lambda: nn.InstanceNorm3d(4), (2, 4, 4, 4, 4)),
    "LazyInstanceNorm1d": (lambda: nn.LazyInstanceNorm1d(), (2, 4, 8)),
    "LazyInstanceNorm2d": (lambda: nn.LazyInstanceNorm2d(), (2, 4, 8, 8)),
    "LazyInstanceNorm3d": (lambda: nn.LazyInstanceNorm3d(), (2, 4, 4, 4, 4)),
    "RReLU": (lambda: nn.RReLU(), (2, 4, 8)),
    "RNN": (lambda: nn.RNN(**RNN), (2, 4, 8)),
    "LSTM": (lambda: nn.LSTM(**RNN), (2, 4, 8)),
    "GRU": (lambda: nn.GRU(**RNN), (2, 4, 8)),
    "MultiheadAttention": (lambda: nn.MultiheadAttention(8, 2, batch_first=True), (2, 4, 8)),
    "TransformerEncoderLayer": (lambda: nn.TransformerEncoderLayer(**ENCODER_LAYER),
                                (2, 4, 8)),
    "TransformerEncoder": (lambda: nn.TransformerEncoder(
        nn.TransformerEncoderLayer(**ENCODER_LAYER), 2), (2, 4, 8)),
}


class Calls(nn.Module):
    """The layer called as a model calls it: attention on (x, x, x) with a padding mask
    (the eval-mode fast path's nested tensors), an encoder with one, the first output kept."""

    def __init__(self, layer: nn.Module) -> None:
        super().__init__()
        self.layer = layer

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        padding = torch.zeros(x.shape[0], x.shape[1], dtype=torch.bool)
        padding[:, -1] = True
        if isinstance(self.layer, nn.MultiheadAttention):
            return self.layer(x, x, x, key_padding_mask=padding)[0]
        if isinstance(self.layer, (nn.TransformerEncoder, nn.TransformerEncoderLayer)):
            return self.layer(x, src_key_padding_mask=padding)
        out = self.layer(x)
        return out[0] if isinstance(out, tuple) else out


def torch_layers_reading_training() -> list[str]:
    return sorted(name for name, cls in vars(nn).items()
                  if inspect.isclass(cls) and issubclass(cls, nn.Module)
                  and cls.__module__.startswith("torch.nn.modules.")
                  and class_reads(cls, "training"))


def _verdict(run: Callable[[], Any]) -> str:
    try:
        run()
    except Exception as error:  # the verdict is what real torch raises, compared across modes
        return f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
    return "ok"


def captures(name: str, mode: str) -> dict[str, Any]:
    """What real torch's captures meet for the layer in ``mode``, on real tensors."""
    make, shape = CASES[name]
    torch.manual_seed(0)
    model = Calls(make())
    model(torch.randn(shape))  # a lazy layer takes its shapes, as before any capture
    model.train(mode == "train")
    x = torch.randn(shape)
    found: dict[str, Any] = {}
    for gradients in (False, True):
        torch._dynamo.reset()
        with contextlib.nullcontext() if gradients else torch.no_grad():
            explained = torch._dynamo.explain(model)(x)
        found[f"compile, gradients {gradients}"] = (
            explained.graph_count, sorted(str(reason.reason).splitlines()[0]
                                          for reason in explained.break_reasons))
    torch._dynamo.reset()
    with torch.no_grad():
        found["fullgraph"] = _verdict(
            lambda: torch.compile(model, backend="eager", fullgraph=True)(x))
    found["export"] = _verdict(lambda: torch.export.export(model, (x,)))
    return found


def test_every_torch_layer_that_reads_training_has_a_case() -> None:
    assert torch_layers_reading_training() == sorted(CASES)


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_torch_layer_is_captured_the_same_in_train_and_eval_mode(name: str) -> None:
    # Not that every layer captures whole: dynamo breaks on the RNNs in both modes alike.
    assert captures(name, "train") == captures(name, "eval")
