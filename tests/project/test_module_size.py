"""No module of the product, its benchmarks or its scripts is over 400 lines: each file does
one job, named for it (docs/contributing.md, "Layout"); a module that grows past it is split by
what it does."""

from __future__ import annotations

import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("fxcore", "fx_lsp", "benchmarks", "scripts")
MAX_LINES = 400


def _modules() -> list[pathlib.Path]:
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))


def test_the_packages_have_modules() -> None:
    assert len(_modules()) > 100


@pytest.mark.parametrize("path", _modules(), ids=lambda path: str(path.relative_to(ROOT)))
def test_module_is_at_most_400_lines(path: pathlib.Path) -> None:
    lines = len(path.read_text(encoding="utf-8").splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(ROOT)}: {lines} lines (split it by its jobs)"
