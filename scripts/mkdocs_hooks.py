"""The documentation site's build hook (mkdocs.yml ``hooks:``): the pages generated from the
code (scripts/generated_pages.py), never committed, added to the site as it is built, every
code's page listed in the navigation under the codes' index; and docs/cli.md's tables of
options, made from the argument parser where the page marks them (scripts/cli_options.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

# The checkout being built is the one documented, whichever fx-lsp is installed. (MkDocs puts
# this folder on sys.path while it loads the hook: the generators beside it import so.)
REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from fxcore.rules.documentation import code_pages  # noqa: E402

from cli_options import with_options  # noqa: E402
from generated_pages import CODES_INDEX, generated_pages  # noqa: E402


def _codes_section(nav: list[Any]) -> list[Any] | None:
    """The navigation's section whose first page is the codes' index."""
    for item in nav:
        for value in item.values() if isinstance(item, dict) else ():
            if isinstance(value, list):
                if value[:1] == [CODES_INDEX]:
                    return value
                found = _codes_section(value)
                if found is not None:
                    return found
    return None


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    section = _codes_section(config.nav or [])
    if section is None:
        raise PluginError(f"mkdocs.yml's nav needs a section that starts with {CODES_INDEX}")
    section[1:] = sorted(path for path in code_pages() if path != CODES_INDEX)
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    for path, text in generated_pages().items():
        if files.get_file_from_path(path) is not None:
            raise PluginError(f"docs/{path} is generated when the site is built: delete it "
                              "and edit what it is generated from")
        files.append(File.generated(config, path, content=text))
    return files


def on_page_markdown(markdown: str, page: Page, **_: Any) -> str:
    try:
        return with_options(markdown)
    except ValueError as error:
        raise PluginError(f"docs/{page.file.src_uri}: {error}") from error
