"""Fixtures for the language-server tests (helpers live in lsp_support.py: pytest loads
every folder's conftest.py under the one name ``conftest``); ``toy_mode`` registers the toy
capture modes of ``tests/support/plain_capture.py`` for the server and its workers."""

from __future__ import annotations

import os
import pathlib
import shutil
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio

from lsp_support import WORKSPACES, FxClient, close_documents, forget_records, session, warm_up

TESTS = pathlib.Path(__file__).parents[2]
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
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(REPO_ROOT), str(TESTS / "support")]))


@pytest.fixture
def release(tmp_path: pathlib.Path, toy_mode: None, monkeypatch: pytest.MonkeyPatch
            ) -> pathlib.Path:
    """The toy slow mode (``plain_capture.WaitsForRelease``) and its release file, not
    created yet: the mode waits in ``forward`` until the test creates it."""
    monkeypatch.setenv("FX_LSP_EXTRA_CAPTURES", "slow=plain_capture:WaitsForRelease")
    path = tmp_path / "release"
    monkeypatch.setenv("FX_LSP_TEST_RELEASE", str(path))
    return path


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def shared_server(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[FxClient]:
    """One warm ``python -m fx_lsp serve --stdio`` (default settings and capabilities) per
    test process, rooted at pytest's base temporary folder: every test's ``tmp_path`` (and so
    its ``workspace`` copy) is a folder of its own inside it, each with its own
    pyproject.toml, so each test's files are its own project. Only for tests that read:
    they open their own files, change no file, setting or workspace state."""
    root = tmp_path_factory.getbasetemp()
    async with session(root) as client:
        await warm_up(client, root / "shared-server-warm-up")
        yield client


@pytest_asyncio.fixture(loop_scope="session")
async def shared_client(shared_server: FxClient) -> AsyncIterator[FxClient]:
    """The shared server's client, its records forgotten; the documents the test opened are
    closed (and their diagnostics cleared) at its end."""
    forget_records(shared_server)
    yield shared_server
    await close_documents(shared_server)
    forget_records(shared_server)
