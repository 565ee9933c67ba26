"""``fx-lsp check --write-baseline``, ``--baseline`` and ``--show-fixed-baseline``: the run's
baseline file written and subtracted from its report (``EngineSession.apply_baseline``) before
any output format prints it, and what was done said."""

from __future__ import annotations

import sys
from typing import TextIO

from fx_lsp.escaping import log_line_start, terminal
from fxcore.api.baselines import BaselineFile
from fxcore.api.check import CheckRun
from fxcore.api.session import EngineSession
from fxcore.reporting import baseline
from fxcore.reporting.shown import display_path


def print_fixed(fixed: list[baseline.Entry], stream: TextIO) -> None:
    """``--show-fixed-baseline``: each entry whose problem is gone, so that the file can be
    rewritten smaller (``--write-baseline``)."""
    count = len(fixed)
    stream.write(f"{count} baselined problem{'s are' if count != 1 else ' is'} fixed"
                 + (" (run with --write-baseline to remove them from the baseline):\n"
                    if count else ".\n"))
    for entry in fixed:
        place = log_line_start(terminal(entry.file))
        owner = f" in {terminal(entry.class_name)}" if entry.class_name else ""
        stream.write(f"  {place}: {entry.code} ({entry.mode}){owner}\n")


def subtract(run: CheckRun, where: BaselineFile, writes: bool, show_fixed: bool,
             summaries: TextIO) -> None:
    """The command line's baseline options on ``run``: write the baseline if asked, then take
    what it holds out of the report, and list its fixed entries if asked."""
    outcome = EngineSession.apply_baseline(run, where, writes)
    if outcome.written is not None:
        count = outcome.written
        summaries.write(f"Wrote {count} problem{'s' * (count != 1)} to the baseline "
                        f"{terminal(display_path(where.path))}.\n")
    if not show_fixed:
        return
    if outcome.fixed is None:
        sys.stderr.write(f"No baseline at {terminal(display_path(where.path))}.\n")
    else:
        print_fixed(outcome.fixed, sys.stderr)
