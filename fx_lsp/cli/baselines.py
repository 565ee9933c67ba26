"""``fx-lsp check --write-baseline``, ``--baseline`` and ``--show-fixed-baseline``: what was
done with the run's baseline file (``EngineSession.apply_baseline`` writes it and subtracts it
from the report before any output format prints it) said."""

from __future__ import annotations

import sys
from typing import TextIO

from fx_lsp.escaping import log_line_start, terminal
from fxcore.api.baselines import BaselineOutcome
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


def say(outcome: BaselineOutcome, show_fixed: bool, summaries: TextIO) -> None:
    """The baseline written (``--write-baseline``), and its fixed entries listed if asked."""
    where = outcome.where
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
