"""The tests mirror the packages: every package folder of ``fxcore`` and ``fx_lsp`` with modules
of its own has a test folder at the same path under ``tests/`` holding its tests, and the helpers
the tests share live in one folder, ``tests/support/`` (pyproject.toml's ``pythonpath``), not
beside them."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"


def _package_folders() -> list[Path]:
    """Package folders with a module beside ``__init__.py`` (``fxcore/`` itself only names
    its rooms)."""
    return sorted(init.parent.relative_to(REPO)
                  for package in ("fxcore", "fx_lsp")
                  for init in (REPO / package).rglob("__init__.py")
                  if any(module.name != "__init__.py" for module in init.parent.glob("*.py")))


def test_every_package_folder_has_a_test_folder_with_tests() -> None:
    missing = [str(folder) for folder in _package_folders()
               if not any((TESTS / folder).glob("test_*.py"))]
    assert not missing, f"package folders without tests/<folder>/test_*.py: {missing}"


def test_shared_helpers_live_in_tests_support() -> None:
    # conftest.py is pytest's; every other module at tests/'s root would be a helper outside
    # the one support folder.
    strays = sorted(path.name for path in TESTS.glob("*.py") if path.name != "conftest.py")
    assert not strays, f"helpers outside tests/support/: {strays}"
    assert (TESTS / "support" / "engine_support.py").is_file()
