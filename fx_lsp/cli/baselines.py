"""``fx-lsp check --write-baseline``, ``--baseline`` and ``--show-fixed-baseline``: the run's
baseline file (``fxcore.api.baselines``) written and subtracted from its report before any
output format prints it, and what was done said."""

from __future__ import annotations

import sys
from typing import TextIO

from fx_lsp.escaping import log_line_start, terminal
from fxcore.api import baselines
from fxcore.model.results import FileResult
from fxcore.reporting import baseline
from fxcore.reporting.report import Report
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


def check_before_run(paths: list[str], named: str | None, writes: bool) -> None:
    """Raise ``baselines.BaselineProblem`` before a run that could take minutes when its
    baseline cannot be read, or cannot be written where ``--write-baseline`` would."""
    where = baselines.locate(paths, named)
    if writes:
        baselines.entries_kept(where)
    else:
        baselines.read(where)


def subtract(report: Report, results: list[FileResult], paths: list[str], writes: bool,
             named: str | None, show_fixed: bool, summaries: TextIO) -> None:
    """The command line's baseline options on a run's ``report`` of ``results``: write the
    baseline if asked, then take what it holds out of the report, and list its fixed
    entries if asked."""
    where = baselines.locate(paths, named)
    if writes:
        count = baselines.write(report, results, where)
        summaries.write(f"Wrote {count} problem{'s' * (count != 1)} to the baseline "
                        f"{terminal(display_path(where.path))}.\n")
    fixed = baselines.subtract(report, results, where)
    if not show_fixed:
        return
    if fixed is None:
        sys.stderr.write(f"No baseline at {terminal(display_path(where.path))}.\n")
    else:
        print_fixed(fixed, sys.stderr)
