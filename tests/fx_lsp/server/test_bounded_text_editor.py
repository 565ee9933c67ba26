"""The editor is sent bounded text: a forward raising a 30 MB error gives a diagnostic of at
most the bound (fxcore.protocol.result_codec.MAX_TEXT_CHARACTERS), saying how much was cut."""

from __future__ import annotations

import pathlib

import pytest

from fxcore.protocol.result_codec import MAX_TEXT_CHARACTERS

from lsp_support import FxClient, new_project

LOUD = """\
import torch
from torch import nn


class Loud(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("A" * 30_000_000)
"""


@pytest.mark.asyncio(loop_scope="session")
async def test_a_30_mb_error_is_a_bounded_diagnostic(
        tmp_path: pathlib.Path, shared_client: FxClient) -> None:
    workspace = new_project(tmp_path)
    model = workspace / "model.py"
    model.write_text(LOUD)
    client = shared_client
    uri = client.open(model)
    diagnostics = await client.diagnostics_for(uri, version=1, timeout=120)
    (error,) = [d for d in diagnostics if d.code == "FX199"]
    assert len(error.message) < MAX_TEXT_CHARACTERS + 200
    assert error.message.endswith("more characters cut by fx-lsp]")
    assert sum(len(d.message) for d in diagnostics) < 2 * MAX_TEXT_CHARACTERS
