"""The ``fx-lsp`` script's entry point: ``fx_lsp.cli.main``, with a Ctrl+C that comes while
its modules are still being imported (a second or two on a busy machine) said in one line, as
``main`` says one during a run, rather than as a traceback through the import machinery."""

from __future__ import annotations

import sys

#: 128 + SIGINT, as shells report a command that Ctrl+C stopped.
EXIT_INTERRUPTED = 130


def interrupted() -> int:
    """Say that Ctrl+C stopped the command, in one line as ruff and pytest do, and give its
    exit status."""
    print("fx-lsp: interrupted", file=sys.stderr)
    # CPython marks a KeyboardInterrupt that leaves code run by exec() of a string (as
    # dataclasses and attrs define methods while a module is imported) as unhandled, and then
    # ends the process by SIGINT instead of the status returned here; the next such exec()
    # clears the mark (pythonrun.c, run_eval_code_obj).
    exec("")
    return EXIT_INTERRUPTED


def main() -> int:
    try:
        from fx_lsp.cli import main as run

        return run()
    except KeyboardInterrupt:
        return interrupted()
