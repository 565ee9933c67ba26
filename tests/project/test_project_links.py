"""The Python package and the VS Code extension link to the same repository, issues and homepage:
pyproject's [project.urls] (PyPI's sidebar) and vscode-client/package.json (the Marketplace's and
Open VSX's)."""

import json
from pathlib import Path

import tomlkit

ROOT = Path(__file__).resolve().parents[2]


def test_pyproject_urls_and_extension_manifest_name_the_same_places() -> None:
    urls = tomlkit.parse((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["urls"]
    manifest = json.loads((ROOT / "vscode-client" / "package.json").read_text(encoding="utf-8"))
    assert manifest["homepage"] == urls["Homepage"]
    assert manifest["repository"]["url"] == urls["Repository"]
    assert manifest["bugs"]["url"] == urls["Issues"]
    assert urls["Issues"] == f"{urls['Repository']}/issues"
