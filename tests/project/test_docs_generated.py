"""The reference is generated from the code, never written by hand: the editor's settings from
the extension's manifest and the server's table of settings (scripts/editor_settings.py), the
command line's options from its argument parser (scripts/cli_options.py). A committed copy (the
settings table of the extension's Marketplace page) fails here while it is stale, and no page
holds a table of options or settings of its own."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fx_lsp.features.initialization_options import documented_settings

import cli_options
import editor_settings
from engine_support import REPO_ROOT
from generated_pages import generated_pages

CLI_PAGE = REPO_ROOT / "docs" / "cli.md"
#: The pages written by hand (docs/benchmarks/'s tables are measurements, written by the runs).
PAGES = sorted([REPO_ROOT / "README.md", REPO_ROOT / "vscode-client" / "README.md",
                *(page for page in (REPO_ROOT / "docs").rglob("*.md")
                  if REPO_ROOT / "docs" / "benchmarks" not in page.parents)])
#: A table row that documents an option (``| `--timeout S` |``) or a setting
#: (``| `fxLsp.run` |``, ``| `debounceMs` |``) by hand.
HAND_ROW = re.compile(r"^\|\s*`(?:--?[\w-]+|fxLsp\.[\w.]+|[a-z]+[A-Z]\w*)[` ]", re.MULTILINE)


def test_the_extensions_settings_table_is_as_its_manifest_makes_it() -> None:
    """If this fails, run ``python3 scripts/editor_settings.py`` and commit what it writes."""
    readme = editor_settings.EXTENSION_README.read_text(encoding="utf-8")
    assert editor_settings.readme_with_table(readme) == readme


def test_a_changed_manifest_makes_the_table_stale(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    manifest = json.loads(editor_settings.MANIFEST.read_text(encoding="utf-8"))
    manifest["contributes"]["configuration"]["properties"]["fxLsp.timeout"]["default"] = 30
    changed = tmp_path / "package.json"
    changed.write_text(json.dumps(manifest), encoding="utf-8")
    monkeypatch.setattr(editor_settings, "MANIFEST", changed)
    readme = editor_settings.EXTENSION_README.read_text(encoding="utf-8")
    updated = editor_settings.readme_with_table(readme)
    assert updated != readme and "| `fxLsp.timeout` | `30` |" in updated


def test_every_setting_is_on_the_settings_page() -> None:
    page = generated_pages()["editor-settings.md"]
    vscode = editor_settings.manifest_settings()
    for name, setting in vscode.items():
        assert f"### `{name}`\n\n- Default: `{json.dumps(setting['default'])}`" in page, name
    for client_key, _, _ in documented_settings():
        assert f"| `{client_key}` |" in page, client_key
    # The server's settings VS Code sends are the manifest's, under the same names.
    sent = {f"{editor_settings.SECTION}{key}" for key, _, _ in documented_settings()}
    assert set(vscode) - sent == {"fxLsp.interpreter", "fxLsp.trace.server"}
    assert editor_settings.project_key("showNotTraced") == "show-not-traced"
    assert editor_settings.project_key("trusted") is None


def test_every_command_has_its_table_of_options() -> None:
    page = CLI_PAGE.read_text(encoding="utf-8")
    marked = cli_options.MARKER.findall(page)
    assert sorted(marked) == sorted(set(cli_options.commands()) - {"fx-lsp"})
    built = cli_options.with_options(page)
    assert "| `--timeout S` | seconds per class before its worker is stopped (default 20) |" \
        in built
    assert "| `--tcp HOST:PORT` |" in built and not cli_options.MARKER.search(built)
    with pytest.raises(ValueError, match="no such command"):
        cli_options.with_options("<!-- options of fx-lsp nothing -->\n")


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO_ROOT)))
def test_no_page_documents_options_or_settings_by_hand(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    start, end = editor_settings.TABLE_START, editor_settings.TABLE_END
    text = re.sub(rf"{re.escape(start)}.*?{re.escape(end)}", "", text, flags=re.DOTALL)
    assert HAND_ROW.findall(text) == []


def test_generated_pages_are_never_committed() -> None:
    committed = {path for path in generated_pages() if (REPO_ROOT / "docs" / path).exists()}
    assert committed == set(), "delete them: the site makes them as it is built"
