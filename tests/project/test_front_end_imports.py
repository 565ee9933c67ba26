"""The front ends (``fx_lsp``: the command line, the language server, the MCP server) use the
engine through its face only: ``fxcore.api`` (the engine session, ``fxcore.api.session``, and
the functions and data it returns) and the data types and renderers of what it returns. None of
them builds an engine, a pipeline, a cache or a call-site index of its own, nor runs a step of
a check: that is the session's job, once for all three.

What else a front end reads of fxcore is listed below; an import outside these lists is a
design change, to be made here on purpose. Imports are read as in ``test_import_cycles``:
deferred and ``TYPE_CHECKING`` ones included.
"""

from __future__ import annotations

import re

import pytest
from test_import_cycles import ROOT, imported_modules, module_files

#: The engine's face: the session and the functions the adapters call.
API = "fxcore.api"
#: The data the API returns and the front ends render, and how it is rendered: the data model
#: (results, job specs, capture modes), the reports and their renderers, the registry of codes
#: and their documentation, a fix and the edits a fix plan holds.
DATA = ("fxcore.model", "fxcore.reporting", "fxcore.rules", "fxcore.fixing.fix_apply",
        "fxcore.fixing.fix")
#: The workspace's files and the editor's buffers as text: read, written without following a
#: link out of the workspace, their lines and notebook cells counted as the editor counts them,
#: their configuration's editor keys. The front ends show positions in them and edit them; the
#: engine reads them the same way, so that both agree on every line.
WORKSPACE_TEXTS = ("fxcore.workspace.paths", "fxcore.workspace.file_access",
                   "fxcore.workspace.kept_bytes", "fxcore.workspace.parsing",
                   "fxcore.workspace.json_nesting", "fxcore.workspace.config",
                   "fxcore.workspace.notebook.cells", "fxcore.workspace.notebook.json_edits",
                   "fxcore.workspace.notebook.module_builder")
MODULES = module_files(ROOT)
FRONT_ENDS = sorted(name for name in MODULES if name.split(".")[0] == "fx_lsp")


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes)


def _allowed(imported: str) -> bool:
    return _within(imported, (API, *DATA, *WORKSPACE_TEXTS))


@pytest.mark.parametrize("module", FRONT_ENDS)
def test_a_front_end_uses_the_engine_through_its_api(module: str) -> None:
    wrong = sorted(imported for imported in imported_modules(module, MODULES[module], set(MODULES))
                   if imported.split(".")[0] == "fxcore" and not _allowed(imported))
    assert wrong == [], f"{module} imports {wrong}: use fxcore.api (the engine session)"


def test_no_front_end_builds_an_engine() -> None:
    """The engine, its pipeline and its cache are made by the session only."""
    built = sorted(module for module in FRONT_ENDS
                   if re.search(r"\b(Engine|Pipeline|ResultCache)\(",
                                MODULES[module].read_text(encoding="utf-8")))
    assert built == []
