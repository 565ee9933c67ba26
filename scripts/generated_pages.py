"""The docs site's pages generated from the code, by their path under ``docs/``: never
committed, added as the site is built (scripts/mkdocs_hooks.py). ``configuration.md`` from the
table of configuration keys (``fxcore.workspace.config_keys``), ``codes/index.md`` and a page per
code from the registry of codes (``fxcore.rules.documentation``), ``editor-settings.md`` from
the extension's manifest and the server's settings (scripts/editor_settings.py). Without
MkDocs, so that the tests of the pages run where the docs extra is not installed."""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # the checkout documented, whichever fx-lsp is installed
    sys.path.insert(0, str(REPO_ROOT))

from fxcore.rules.documentation import DOCS_URL_VARIABLE, code_pages, docs_url  # noqa: E402
from fxcore.workspace.config_keys import configuration_markdown  # noqa: E402

from editor_settings import settings_page  # noqa: E402

CODES_INDEX = "codes/index.md"


def generated_pages() -> dict[str, str]:
    """Each generated page's Markdown, by its path under ``docs/``."""
    return {"configuration.md": configuration_markdown(DOCS_URL_VARIABLE, docs_url()),
            "editor-settings.md": settings_page(),
            **code_pages()}
