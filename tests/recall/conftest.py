"""Registers the ``recall`` marker (multi-failure recall of one fx-lsp pass)."""

from __future__ import annotations

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "recall: one fx-lsp pass over tests/recall/models against the fix-and-retrace "
        "ground truth of plain torch.fx",
    )
