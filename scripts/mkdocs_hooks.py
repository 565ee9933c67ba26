"""The documentation site's build hook (mkdocs.yml ``hooks:``): the pages generated from the
code, never committed, added to the site as it is built: ``configuration.md`` from the table
of configuration keys (``fxcore.workspace.config_keys``), ``codes/index.md``, one page per
code and ``codes/GBnnnn.md`` from the registry of codes (``fxcore.rules.documentation``).
Every code's page is listed in the navigation, under the codes' index."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

# The checkout being built is the one documented, whichever fx-lsp is installed.
REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from fxcore.rules.documentation import DOCS_URL_VARIABLE, code_pages, docs_url  # noqa: E402
from fxcore.workspace.config_keys import configuration_markdown  # noqa: E402

CODES_INDEX = "codes/index.md"


def generated_pages() -> dict[str, str]:
    """Each generated page's Markdown, by its path under ``docs/``."""
    return {"configuration.md": configuration_markdown(DOCS_URL_VARIABLE, docs_url()),
            **code_pages()}


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
