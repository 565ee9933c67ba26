"""The search's eager runs on a class that sets a flag buffer on its first call: each run
meets the flag as built (a user's next try is on a fresh instance), and fake tensors' refusal
to resize a buffer fx-lsp built on meta is a limit of the meta device, not the inputs'."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from fxcore.model.tensor_spec import TensorSpec
from fxcore.worker.inputs.eager_runs.eager_run import run_eagerly
from fxcore.worker.meta.literal_values import literal_of, literal_tensors
from fxcore.worker.meta.meta_limits import needs_real_data


class SetsUpOnFirstCall(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("initialized", torch.tensor(0))
        self.register_buffer("v", torch.zeros(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not self.initialized:
            self.initialized.fill_(1)
            self.v.resize_(x.shape[1])
        return x.relu() + x.sum()


def built_on_meta() -> SetsUpOnFirstCall:
    with literal_tensors(), torch.device("meta"):
        return SetsUpOnFirstCall()


def test_each_run_meets_the_flag_as_built() -> None:
    model = built_on_meta()
    run_eagerly(model, "meta", {"x": TensorSpec("float32", (2, 8))}, {}, 60.0)
    assert model.initialized._version > 0  # the run set it
    assert literal_of(model.initialized) == 0  # and the next run reads it as built


def test_a_meta_buffer_resized_under_fake_tensors_is_a_meta_limit() -> None:
    model = built_on_meta()
    with pytest.raises(AssertionError) as raised:
        run_eagerly(model, "meta", {"x": TensorSpec("float32", (2, 8))}, {}, 60.0, fake=True)
    limit = needs_real_data(raised.value)
    assert limit is not None and "resizes" in limit.what
