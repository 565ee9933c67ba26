"""``--statistics``: the number of problems per code."""

from __future__ import annotations

from collections import Counter
from typing import TextIO

from fxcore.reporting.shown import ShownReport
from fxcore.rules.documentation import documentation


def statistics(report: ShownReport, stream: TextIO) -> None:
    """The number of problems per code, most frequent first."""
    counts = Counter(shown.problem.code for shown in report.problems)
    docs = documentation()
    for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        title = docs[code].title if code in docs else ""
        stream.write(f"{count:>5}\t{code}\t{title}\n")
