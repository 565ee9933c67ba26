"""How the command line says that Ctrl+C stopped it: one line, as ruff and pytest do, and the
status shells give a command that SIGINT stopped. Shared by the entry point (``launch``, for
a Ctrl+C while modules are imported) and ``cli.main`` (during a run)."""

from __future__ import annotations

import sys

#: 128 + SIGINT, as shells report a command that Ctrl+C stopped.
EXIT_INTERRUPTED = 130


def interrupted() -> int:
    """Say that Ctrl+C stopped the command, in one line, and give its exit status."""
    print("fx-lsp: interrupted", file=sys.stderr)
    # CPython marks a KeyboardInterrupt that leaves code run by exec() of a string (as
    # dataclasses and attrs define methods while a module is imported) as unhandled, and then
    # ends the process by SIGINT instead of the status returned here; the next such exec()
    # clears the mark (pythonrun.c, run_eval_code_obj).
    exec("")
    return EXIT_INTERRUPTED
