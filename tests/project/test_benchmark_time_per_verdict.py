"""The library benchmark's time columns (``benchmarks/fidelity/verdicts_apart.py``): seconds
per verdict beside the baseline's, the classes that get a verdict for the first time measured
apart by their files' job seconds, each class held to its own capture seconds then without
compile mode's loop of calls, and the loop's seconds apart, on reports made for the test."""

from __future__ import annotations

import sys

import pytest

from engine_support import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT))
from benchmarks.fidelity.library_judging import has_verdict
from benchmarks.fidelity.verdicts_apart import (
    TimeFigures,
    first_verdict_files,
    jobs_loop_seconds,
    judged_otherwise,
    kept_verdict_seconds,
    loop_seconds,
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


def _looped(name: str, mode: str, seconds: float, loop: float) -> dict:
    return {**_module(name, mode, "traceable"), "trace_seconds": seconds, "loop_seconds": loop}


#: The baseline, from before the loop of calls: its reports have no ``loop_seconds``.
BEFORE_THE_LOOP = {"modules": [
    {**_module("Filter", "fx", "traceable"), "trace_seconds": 0.5},
    {**_module("Filter", "compile", "traceable"), "trace_seconds": 1.5},
    {**_module("Block", "compile", "traceable"), "trace_seconds": 1.0}]}


def test_the_loop_of_calls_alone_does_not_put_a_class_over_its_bound() -> None:
    # Filter: 2.0 s then; 6.0 now, 3.2 of them its loop of calls: 2.8 s without, 1.40x.
    after = {"modules": [_looped("Filter", "fx", 0.6, 0.0),
                         _looped("Filter", "compile", 5.4, 3.2),
                         _looped("Block", "compile", 1.2, 0.1)],
             # a.py's job also compiled a submodule instance its classes built, with its loop
             "files": [{"path": "a.py", "seconds": 9.0, "loop_seconds": 3.6}]}
    time = TimeFigures(verdicts=3, baseline_verdicts=3,
                       kept=kept_verdict_seconds(after, BEFORE_THE_LOOP, has_verdict),
                       loops=loop_seconds(after), jobs_loops=jobs_loop_seconds(after))
    assert time.kept["a:Filter"] == pytest.approx((2.8, 2.0))
    # With the loop inside the bound, Filter took 3x its time then; without it, 1.4x.
    assert 0.6 + 5.4 > 1.5 * 2.0
    assert time.over_bound() == []
    assert time.kept_classes() == "2/2 within 1.5x; worst 1.40x (Filter); all 3.9 s against 3.0"
    # The loop's seconds, apart: both classes ran it.
    assert time.loops == {"a:Filter": 3.2, "a:Block": 0.1}
    assert time.loop() == ("2: median 1.65, worst 3.20 (Filter); all 3.3 s; with the "
                           "submodules judged inside them 3.6 s")
    # 9 s over 3 verdicts against 3 over 3: 3x with the loop; 5.4 s without any, 1.80x.
    assert time.per_verdict(9.0, 3.0) == ("3.00 (3.00x 1.00); without the loop of calls "
                                          "1.80 (1.80x 1.00)")
    assert time.per_verdict(9.0, None) == "3.00; without the loop of calls 1.80"


def test_a_class_over_its_bound_without_the_loop_of_calls_is_still_over() -> None:
    # Filter: 2.0 s then; 5.0 without its loop of calls now (2.50x), 1.0 more in the loop.
    after = {"modules": [_looped("Filter", "fx", 1.0, 0.0),
                         _looped("Filter", "compile", 5.0, 1.0),
                         _looped("Block", "compile", 1.0, 0.0)]}
    time = TimeFigures(kept=kept_verdict_seconds(after, BEFORE_THE_LOOP, has_verdict),
                       loops=loop_seconds(after))
    assert time.over_bound() == [("a:Filter", 5.0, 2.0)]
    assert time.kept_classes() == "1/2 within 1.5x; worst 2.50x (Filter); all 6.0 s against 3.0"
    # A class whose loop did not run (or took no time) is not among the loop's classes.
    # (its files say nothing of the jobs' loops)
    assert time.loop() == "1: median 1.00, worst 1.00 (Filter); all 1.0 s"
    assert TimeFigures().loop() == "-"
    # A report from before the loop: its files and modules say nothing of it.
    assert jobs_loop_seconds(BEFORE_THE_LOOP) == 0 and loop_seconds(BEFORE_THE_LOOP) == {}


def test_a_class_over_its_bound_on_another_instance_than_then_is_named_so() -> None:
    def judged(name: str, seconds: float, arguments: dict, nodes: int) -> dict:
        return {**_module(name, "export", "traceable"), "trace_seconds": seconds,
                "arguments": arguments, "inputs": {"tensors": {"x": "float32[2, 3, 8, 8]"}},
                "node_count": nodes}

    guessed = {"from": "guessed", "kwargs": {"in_channels": "3"}}
    from_parent = {"from": "parent", "parent": "a:Net", "path": "blocks.0"}
    before = {"modules": [judged("Block", 1.0, guessed, 8), judged("Same", 1.0, guessed, 4)]}
    after = {"modules": [judged("Block", 3.0, from_parent, 23),
                         judged("Same", 2.0, guessed, 4)]}
    time = TimeFigures(kept=kept_verdict_seconds(after, before, has_verdict),
                       otherwise=judged_otherwise(after, before, has_verdict))
    # Block is now a parent's larger instance; Same was judged on the same one both times.
    assert time.otherwise == {"a:Block": (23, 8)}
    assert [name for name, _, _ in time.over_bound()] == ["a:Block", "a:Same"]
    assert time.kept_classes() == (
        "0/2 within 1.5x; worst 3.00x (Block); all 5.0 s against 2.0; 1 of the 2 over it "
        "judged on other arguments or inputs than then")
    assert judged_otherwise(before, before, has_verdict) == {}
