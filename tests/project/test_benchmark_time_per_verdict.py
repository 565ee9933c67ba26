"""The library benchmark's time columns (``benchmarks/fidelity/verdicts_apart.py``): seconds
per verdict beside the baseline's, and the classes that get a verdict for the first time
measured apart by their files' job seconds, on reports made for the test."""

from __future__ import annotations

import sys

from engine_support import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT))
from benchmarks.fidelity.library_judging import has_verdict
from benchmarks.fidelity.verdicts_apart import (
    TimeFigures,
    first_verdict_files,
    kept_verdict_seconds,
    lost_verdicts,
    verdict_count,
)


def _module(name: str, mode: str, status: str, path: str = "a.py") -> dict:
    return {"qualified_name": f"a:{name}", "class": name, "mode": mode, "status": status,
            "path": path, "failures": [], "reason": "no example inputs" if status else None}


def test_first_verdicts_are_measured_apart_and_seconds_are_per_verdict() -> None:
    before = {"modules": [_module("Old", "fx", "traceable"), _module("Old", "export",
                                                                      "traceable"),
                          _module("New", "fx", "traceable"),
                          _module("New", "export", "not-traced", "b.py")],
              "files": [{"path": "a.py", "seconds": 3.0}, {"path": "b.py", "seconds": 5.0}]}
    after = {"modules": [*before["modules"][:3], _module("New", "export", "traceable", "b.py"),
                         _module("Third", "export", "traceable", "c.py")],
             "files": [{"path": "a.py", "seconds": 3.0}, {"path": "b.py", "seconds": 9.0},
                       {"path": "c.py", "seconds": 4.0}]}
    time = TimeFigures(verdict_count(after, has_verdict), verdict_count(before, has_verdict),
                       first_verdict_files(after, before, has_verdict))
    assert (time.verdicts, time.baseline_verdicts) == (5, 3)
    assert time.first_verdicts == {"a:New": 9.0, "a:Third": 4.0}
    assert time.first() == "2: median 6.5, worst 9.0"
    # 20 s over 5 verdicts against 12 s over 3: 4.00 a verdict, the same as before.
    assert time.per_verdict(20.0, 12.0) == "4.00 (1.00x 4.00)"
    assert time.per_verdict(20.0, None) == "4.00"


def test_verdicts_the_baseline_had_and_this_tree_lost_are_listed() -> None:
    before = {"modules": [_module("Kept", "fx", "traceable"), _module("Lost", "export",
                                                                       "traceable"),
                          _module("Never", "export", "not-traced")]}
    after = {"modules": [_module("Kept", "fx", "traceable"), _module("Lost", "export",
                                                                      "not-traced"),
                         _module("Never", "export", "traceable")]}
    assert lost_verdicts(after, before, has_verdict) == ["a:Lost (export)"]
    assert lost_verdicts(before, before, has_verdict) == []


def test_each_class_with_a_verdict_at_both_is_held_to_its_own_time_then() -> None:
    def timed(name: str, mode: str, status: str, seconds: float) -> dict:
        return {**_module(name, mode, status), "trace_seconds": seconds}

    before = {"modules": [timed("Fast", "fx", "traceable", 1.0),
                          timed("Fast", "compile", "traceable", 1.0),
                          timed("Slow", "compile", "traceable", 1.0),
                          timed("New", "compile", "not-traced", 0.0)]}
    after = {"modules": [timed("Fast", "fx", "traceable", 1.0),
                         timed("Fast", "compile", "traceable", 1.5),
                         timed("Slow", "compile", "traceable", 1.6),
                         timed("New", "compile", "traceable", 9.0)]}
    time = TimeFigures(kept=kept_verdict_seconds(after, before, has_verdict))
    # The new verdict is measured apart; each kept class is summed over its modes.
    assert time.kept == {"a:Fast": (2.5, 2.0), "a:Slow": (1.6, 1.0)}
    assert time.over_bound() == [("a:Slow", 1.6, 1.0)]
    assert time.kept_classes() == "1/2 within 1.5x; worst 1.60x (Slow); all 4.1 s against 3.0"
