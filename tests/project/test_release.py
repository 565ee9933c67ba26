"""One version for the Python package and the VS Code extension, with a CHANGELOG entry for it:
the checks of ``scripts/set_version.py --check`` on the repository, and the script that sets a
new version everywhere (docs/contributing.md, "Releasing")."""

from __future__ import annotations

import importlib.metadata
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import fx_lsp

from engine_support import REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "set_version.py"
VERSIONED_FILES = ("pyproject.toml", "CHANGELOG.md", "vscode-client/package.json",
                   "vscode-client/package-lock.json")


def run_script(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *arguments], capture_output=True,
                          text=True, timeout=60)


def pyproject_version(root: Path) -> str:
    import tomllib

    return tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "version"]


@pytest.fixture
def release_copy(tmp_path: Path) -> Path:
    """The files that carry the version, copied as they are in the repository."""
    for name in VERSIONED_FILES:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(REPO_ROOT / name, tmp_path / name)
    return tmp_path


def test_the_package_and_the_extension_have_one_version() -> None:
    version = pyproject_version(REPO_ROOT)
    package = json.loads((REPO_ROOT / "vscode-client/package.json").read_text(encoding="utf-8"))
    lock = json.loads((REPO_ROOT / "vscode-client/package-lock.json").read_text(encoding="utf-8"))
    assert (package["version"], lock["version"], lock["packages"][""]["version"]) == (
        version, version, version)
    completed = run_script("--check")
    assert (completed.returncode, completed.stderr) == (0, "")


def test_the_changelog_has_an_entry_for_the_current_version() -> None:
    version = pyproject_version(REPO_ROOT)
    changelog = (REPO_ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    headings = [line for line in changelog.splitlines() if line.startswith("## ")]
    assert headings[0] == "## [Unreleased]"
    assert any(line.startswith(f"## [{version}] - ") for line in headings), headings


def test_the_installed_version_is_the_project_version() -> None:
    # The suite runs on an install of this tree (pip install -e .): its metadata is pyproject's.
    assert fx_lsp.__version__ == importlib.metadata.version("fx-lsp")
    assert fx_lsp.__version__ == pyproject_version(REPO_ROOT)


def test_the_check_fails_when_the_extension_says_another_version(release_copy: Path) -> None:
    package_path = release_copy / "vscode-client/package.json"
    package = json.loads(package_path.read_text(encoding="utf-8"))
    package["version"] = "9.9.9"
    package_path.write_text(json.dumps(package, indent=2) + "\n", encoding="utf-8")
    completed = run_script("--check", "--root", str(release_copy))
    version = pyproject_version(release_copy)
    assert completed.returncode == 1
    assert completed.stderr == f"vscode-client/package.json says 9.9.9, pyproject.toml {version}\n"


def test_set_version_writes_every_place_and_releases_the_unreleased_changes(
        release_copy: Path) -> None:
    changelog_path = release_copy / "CHANGELOG.md"
    changelog = changelog_path.read_text(encoding="utf-8")
    changelog_path.write_text(changelog.replace(
        "## [Unreleased]\n", "## [Unreleased]\n\n### Fixed\n\n- Something.\n", 1),
        encoding="utf-8")
    before = {name: (release_copy / name).read_text(encoding="utf-8")
              for name in VERSIONED_FILES}
    completed = run_script("12.3.4", "--root", str(release_copy))
    assert (completed.returncode, completed.stderr) == (0, "")
    assert pyproject_version(release_copy) == "12.3.4"
    for name in VERSIONED_FILES[2:]:
        data = json.loads((release_copy / name).read_text(encoding="utf-8"))
        assert data["version"] == "12.3.4"
    changelog = changelog_path.read_text(encoding="utf-8")
    start = changelog.index("## [Unreleased]")
    assert changelog[start:].startswith("## [Unreleased]\n\n## [12.3.4] - ")
    assert changelog.index("- Something.") > changelog.index("## [12.3.4]")
    assert changelog.index("- Something.") < changelog.index("## [0.1.0]")
    # Only the version changes: formatting and every other field stay as they were.
    old_version = pyproject_version(REPO_ROOT)
    changed_lines = {"pyproject.toml": 1, "vscode-client/package.json": 1,
                     "vscode-client/package-lock.json": 2}  # its own and its root package's
    for name, count in changed_lines.items():
        old_lines = before[name].splitlines()
        new_lines = (release_copy / name).read_text(encoding="utf-8").splitlines()
        assert len(old_lines) == len(new_lines), name
        changes = [(old, new) for old, new in zip(old_lines, new_lines, strict=True)
                   if old != new]
        assert len(changes) == count, (name, changes)
        assert all(new == old.replace(old_version, "12.3.4") for old, new in changes), changes
    assert run_script("--check", "--root", str(release_copy)).returncode == 0


def test_set_version_takes_only_a_plain_version(release_copy: Path) -> None:
    completed = run_script("1.0.0rc1", "--root", str(release_copy))
    assert completed.returncode == 2 and "X.Y.Z" in completed.stderr
