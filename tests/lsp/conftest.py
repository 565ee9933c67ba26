"""Fixtures for the language-server tests (helpers live in lsp_support.py: pytest loads
every folder's conftest.py under the one name ``conftest``)."""

from __future__ import annotations

import pathlib
import shutil

import pytest

from lsp_support import WORKSPACES


@pytest.fixture
def workspace(tmp_path: pathlib.Path) -> pathlib.Path:
    """A private copy of the basic workspace (fixes edit it)."""
    target = tmp_path / "basic"
    shutil.copytree(WORKSPACES / "basic", target)
    return target
