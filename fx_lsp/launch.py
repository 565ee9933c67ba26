"""The ``fx-lsp`` script's entry point: ``fx_lsp.cli.main``, with a Ctrl+C that comes while
its modules are still being imported (a second or two on a busy machine) said in one line, as
``main`` says one during a run, rather than as a traceback through the import machinery."""

from __future__ import annotations

from fx_lsp.interruption import interrupted


def main() -> int:
    try:
        from fx_lsp.cli.main import main as run

        return run()
    except KeyboardInterrupt:
        return interrupted()
