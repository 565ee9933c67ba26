"""The front ends (``fx_lsp``: the command line, the language server, the MCP server) use the
engine through its face only: ``fxcore.api`` (the engine session, ``fxcore.api.session``, and
the functions and data it returns) and the data types and renderers of what it returns. None of
them builds an engine, a pipeline, a cache or a call-site index of its own, nor runs a step of
a check: that is the session's job, once for all three.

What else a front end reads of fxcore is listed below, each module with the front-end modules
that may import it and why; an import outside these lists is a design change, to be made here
on purpose. Imports are read as in ``test_import_cycles``: deferred and ``TYPE_CHECKING`` ones
included.
"""

from __future__ import annotations

import re

import pytest
from test_import_cycles import ROOT, imported_modules, module_files

#: The engine's face: the session and the functions the adapters call.
API = "fxcore.api"
#: The data the API returns and the front ends render, and how it is rendered: the data model
#: (results, job specs, capture modes), the reports and their renderers, the registry of codes
#: and their documentation, and the edits a fix plan holds.
DATA = ("fxcore.model", "fxcore.reporting", "fxcore.rules", "fxcore.fixing.fix_apply")
#: The workspace's files and the editor's buffers as text: read, written without following a
#: link out of the workspace, their lines and notebook cells counted as the editor counts them,
#: their configuration's editor keys. The front ends show positions in them and edit them; the
#: engine reads them the same way, so that both agree on every line.
WORKSPACE_TEXTS = ("fxcore.workspace.paths", "fxcore.workspace.file_access",
                   "fxcore.workspace.kept_bytes", "fxcore.workspace.parsing",
                   "fxcore.workspace.json_nesting", "fxcore.workspace.config",
                   "fxcore.workspace.notebook.cells", "fxcore.workspace.notebook.json_edits",
                   "fxcore.workspace.notebook.module_builder")
#: Engine modules still used by a front end, each by the modules named, and why. Keep it short:
#: what moves behind the session leaves this list.
ALLOWANCE: dict[str, tuple[frozenset[str], str]] = {
    "fxcore.fixing.fix_plan": (
        frozenset({"fx_lsp.features.code_actions", "fx_lsp.features.snapshot",
                   "fx_lsp.cli.output_formats.full"}),
        "the editor's quick fixes of one diagnostic, planned on the document's snapshot in the "
        "server's fix thread, and the fix title the full format prints beside a problem"),
    "fxcore.fixing.fix_trials": (
        frozenset({"fx_lsp.cli.fixing"}),
        "--fix's rounds: which fixes of a round to take back, judged on the next run"),
    "fxcore.fixing.noqa_edits": (
        frozenset({"fx_lsp.cli.add_noqa"}),
        "--add-noqa's comments, planned on the report the command line shows"),
    "fxcore.checking.pipeline": (
        frozenset({"fx_lsp.server.documents"}),
        "the handles of a document's staged traces (the session's CheckHandle)"),
    "fxcore.checking.parent_verdicts": (
        frozenset({"fx_lsp.server.documents"}),
        "an open document's results published again with the verdicts of the classes that "
        "build its classes, as other documents' traces bring them"),
}

MODULES = module_files(ROOT)
FRONT_ENDS = sorted(name for name in MODULES if name.split(".")[0] == "fx_lsp")


def _within(module: str, prefixes: tuple[str, ...]) -> bool:
    return any(module == prefix or module.startswith(prefix + ".") for prefix in prefixes)


def _allowed(front_end: str, imported: str) -> bool:
    if _within(imported, (API, *DATA, *WORKSPACE_TEXTS)):
        return True
    users, _ = ALLOWANCE.get(imported, (frozenset(), ""))
    return front_end in users


@pytest.mark.parametrize("module", FRONT_ENDS)
def test_a_front_end_uses_the_engine_through_its_api(module: str) -> None:
    wrong = sorted(imported for imported in imported_modules(module, MODULES[module], set(MODULES))
                   if imported.split(".")[0] == "fxcore" and not _allowed(module, imported))
    assert wrong == [], f"{module} imports {wrong}: use fxcore.api (the engine session)"


def test_the_allowance_lists_only_imports_that_are_made() -> None:
    """An allowance whose import is gone is taken off the list, so that it cannot come back
    unnoticed."""
    unused = sorted(f"{user} -> {engine_module}"
                    for engine_module, (users, _) in ALLOWANCE.items() for user in users
                    if engine_module not in imported_modules(user, MODULES[user], set(MODULES)))
    assert unused == []


def test_no_front_end_builds_an_engine() -> None:
    """The engine, its pipeline and its cache are made by the session only."""
    built = sorted(module for module in FRONT_ENDS
                   if re.search(r"\b(Engine|Pipeline|ResultCache)\(",
                                MODULES[module].read_text(encoding="utf-8")))
    assert built == []
