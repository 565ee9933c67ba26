"""Set the one version of fx-lsp: ``python scripts/set_version.py X.Y.Z``.

pyproject.toml's ``version`` is the source; the VS Code extension's package.json (and its
package-lock.json) must say the same, and CHANGELOG.md's "Unreleased" changes become the
version's entry, dated today. ``python scripts/set_version.py --check`` only says whether
they agree (tests/project/test_release.py runs the same checks)."""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
from pathlib import Path

import tomlkit

ROOT = Path(__file__).resolve().parent.parent
#: X.Y.Z only: the VS Code Marketplace takes no pre-release suffix in an extension's version.
VERSION_PATTERN = re.compile(r"\d+\.\d+\.\d+")
UNRELEASED = "## [Unreleased]"
EXTENSION_FILES = ("vscode-client/package.json", "vscode-client/package-lock.json")


def python_version(root: Path) -> str:
    pyproject = tomlkit.parse((root / "pyproject.toml").read_text(encoding="utf-8"))
    return str(pyproject["project"]["version"])  # type: ignore[index]


def extension_versions(root: Path) -> dict[str, str]:
    """Each extension file's version (package-lock.json's twice: its own and its root
    package's)."""
    versions = {}
    for name in EXTENSION_FILES:
        data = json.loads((root / name).read_text(encoding="utf-8"))
        versions[name] = data["version"]
        if "packages" in data:
            versions[f"{name} (packages[''])"] = data["packages"][""]["version"]
    return versions


def changelog_entry(root: Path, version: str) -> str | None:
    """The heading of ``version``'s entry in CHANGELOG.md, None when it has none."""
    pattern = re.compile(rf"^## \[{re.escape(version)}\] - \d{{4}}-\d{{2}}-\d{{2}}$", re.M)
    match = pattern.search((root / "CHANGELOG.md").read_text(encoding="utf-8"))
    return match[0] if match else None


def problems(root: Path) -> list[str]:
    """Why the version is not one version with a CHANGELOG entry (empty when it is)."""
    version = python_version(root)
    found = [f"{name} says {other}, pyproject.toml {version}"
             for name, other in extension_versions(root).items() if other != version]
    if changelog_entry(root, version) is None:
        found.append(f"CHANGELOG.md has no entry '## [{version}] - YYYY-MM-DD'")
    return found


def _write_json_version(path: Path, version: str) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    data["version"] = version
    if "packages" in data:
        data["packages"][""]["version"] = version
    # npm's own layout (two spaces, a final newline): the files change by their version only.
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def set_version(root: Path, version: str, today: datetime.date) -> None:
    changelog_path = root / "CHANGELOG.md"
    changelog = changelog_path.read_text(encoding="utf-8")
    if UNRELEASED not in changelog:
        raise SystemExit(f"CHANGELOG.md has no '{UNRELEASED}' section to release")
    if changelog_entry(root, version) is None:
        changelog = changelog.replace(
            UNRELEASED, f"{UNRELEASED}\n\n## [{version}] - {today.isoformat()}", 1)
        changelog_path.write_text(changelog, encoding="utf-8")
    pyproject_path = root / "pyproject.toml"
    pyproject = tomlkit.parse(pyproject_path.read_text(encoding="utf-8"))
    pyproject["project"]["version"] = version  # type: ignore[index]
    pyproject_path.write_text(tomlkit.dumps(pyproject), encoding="utf-8")
    for name in EXTENSION_FILES:
        _write_json_version(root / name, version)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("version", nargs="?", help="the new version, X.Y.Z")
    parser.add_argument("--check", action="store_true",
                        help="only check that the versions agree and have a CHANGELOG entry")
    parser.add_argument("--root", type=Path, default=ROOT, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.check == (arguments.version is not None):
        parser.error("give either a version or --check")
    if arguments.version is not None:
        if not VERSION_PATTERN.fullmatch(arguments.version):
            parser.error(f"{arguments.version}: give the version as X.Y.Z")
        set_version(arguments.root, arguments.version, datetime.date.today())
    found = problems(arguments.root)
    for problem in found:
        print(problem, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
