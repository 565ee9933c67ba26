"""Fixtures for the language-server tests (helpers live in lsp_support.py: pytest loads
every folder's conftest.py under the one name ``conftest``); ``toy_mode`` registers the toy
capture modes of ``tests/plain_capture.py`` for the server and its workers."""

from __future__ import annotations

import os
import pathlib
import shutil

import pytest

from lsp_support import WORKSPACES

TESTS = pathlib.Path(__file__).parent.parent
REPO_ROOT = TESTS.parent


@pytest.fixture
def workspace(tmp_path: pathlib.Path) -> pathlib.Path:
    """A private copy of the basic workspace (fixes edit it)."""
    target = tmp_path / "basic"
    shutil.copytree(WORKSPACES / "basic", target)
    return target


@pytest.fixture
def toy_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server (and the workers it forks) can import the toy mode."""
    monkeypatch.setenv("FX_LSP_EXTRA_CAPTURES", "plain=plain_capture:PlainSymbolicTrace")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO_ROOT), str(TESTS)]))
