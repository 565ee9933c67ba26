"""The output formats render a report whose places and notes are resolved
(``fxcore.reporting.shown``): none imports the run (``fx_lsp.cli.check``), which only the command
line's commands do. Imports are read as ``test_import_cycles`` reads them, deferred and
``TYPE_CHECKING`` ones included."""

from __future__ import annotations

import pytest
from test_import_cycles import ROOT, imported_modules, module_files

MODULES = module_files(ROOT)
RUN = "fx_lsp.cli.check"
#: What renders a run's report, or acts on it after the run: the output formats, the JSON
#: report, the graph page, fixes, noqa comments and baselines.
RENDERERS = sorted(name for name in MODULES if name.startswith("fx_lsp.cli.output_formats")
                   or name in {"fx_lsp.cli.graph_html", "fx_lsp.cli.fixing", "fx_lsp.cli.add_noqa",
                               "fx_lsp.cli.baselines"})


def _imports_the_run(module: str) -> bool:
    return RUN in imported_modules(module, MODULES[module], set(MODULES))


@pytest.mark.parametrize("module", RENDERERS)
def test_no_renderer_imports_the_run(module: str) -> None:
    assert not _imports_the_run(module)


def test_at_most_three_modules_import_the_run() -> None:
    importers = sorted(name for name in MODULES if _imports_the_run(name))
    assert len(importers) <= 3, importers
