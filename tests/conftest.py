"""Shared fixtures: one real engine (zygote + forked workers) for the whole session, and
workspaces written to temporary folders."""

from __future__ import annotations

import os
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from fxcore.engine import Engine
from fxcore.model import EngineConfig, FileResult, TraceJob

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = REPO_ROOT / "examples"


@pytest.fixture(scope="session")
def engine() -> Iterator[Engine]:
    engine = Engine(workers=2)
    yield engine
    engine.close()


class Workspace:
    """A folder with a pyproject.toml, filled with dedented source files."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "pyproject.toml").write_text("[project]\nname = 'ws'\nversion = '0'\n")

    def write(self, relative: str, text: str) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    def check(self, engine: Engine, relative: str, config: EngineConfig | None = None,
              overlays: dict[str, str] | None = None) -> FileResult:
        return engine.check(
            TraceJob(path=str(self.root / relative), workspace_root=str(self.root),
                     config=config or EngineConfig(), overlays=overlays or {})
        )


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path)


def span_of(path: Path, line: int, snippet: str, occurrence: int = 1) -> tuple[int, int, int, int]:
    """(line, column, end_line, end_column) of a snippet on a line: 1-based characters."""
    text = path.read_text(encoding="utf-8").splitlines()[line - 1]
    start = -1
    for _ in range(occurrence):
        start = text.index(snippet, start + 1)
    return line, start + 1, line, start + 1 + len(snippet)


def line_of(path: Path, snippet: str) -> int:
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if snippet in text:
            return number
    raise AssertionError(f"{snippet!r} not in {path}")


def failure_span(failure) -> tuple[int, int, int, int]:
    return failure.line, failure.column, failure.end_line, failure.end_column


os.environ.setdefault("FX_LSP_TEST", "1")
