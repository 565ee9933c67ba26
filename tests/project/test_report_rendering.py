"""The output formats render a report whose places and notes are resolved
(``fxcore.reporting.shown``): none imports the run (``fxcore.api.check``), which only the
adapters' commands (the command line's, the MCP server's tools) and the engine's API call.
Imports are read as ``test_import_cycles`` reads them, deferred and ``TYPE_CHECKING`` ones
included."""

from __future__ import annotations

import pytest
from test_import_cycles import ROOT, imported_modules, module_files

MODULES = module_files(ROOT)
RUN = "fxcore.api.check"
#: What renders a run's report, or acts on it after the run: the output formats, the JSON
#: report, the graph page, fixes, noqa comments and baselines.
RENDERERS = sorted(name for name in MODULES if name.startswith("fx_lsp.cli.output_formats")
                   or name in {"fx_lsp.cli.graph_html", "fx_lsp.cli.fixing", "fx_lsp.cli.add_noqa",
                               "fx_lsp.cli.baselines", "fx_lsp.fix_texts",
                               "fxcore.reporting.json_report", "fxcore.api.fixes",
                               "fxcore.api.baselines", "fxcore.api.graph"})
#: The commands that run a check: the command line's and the MCP server's.
COMMANDS = {"fx_lsp.cli.main", "fx_lsp.mcp_server.tools"}


def _imports_the_run(module: str) -> bool:
    return RUN in imported_modules(module, MODULES[module], set(MODULES))


@pytest.mark.parametrize("module", RENDERERS)
def test_no_renderer_imports_the_run(module: str) -> None:
    assert not _imports_the_run(module)


def test_only_the_commands_and_the_api_import_the_run() -> None:
    importers = sorted(name for name in MODULES if _imports_the_run(name))
    assert "fx_lsp.cli.main" in importers  # the walk found them
    assert [name for name in importers
            if name not in COMMANDS and not name.startswith("fxcore.api.")] == []
