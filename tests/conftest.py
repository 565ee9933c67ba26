"""Fixtures for the engine and CLI tests: one real engine (zygote + forked workers) for the
whole session, and workspaces written to temporary folders."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from fxcore.engine import Engine

from engine_support import Workspace


@pytest.fixture(scope="session")
def engine() -> Iterator[Engine]:
    engine = Engine(workers=2)
    yield engine
    engine.close()


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path)
