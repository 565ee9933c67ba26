"""``time_limit``, the limit on an eager run of a model while its inputs are searched for:
out of time when the run outlasts it, at once when no time is left (a timer set to 0 would be
a timer disarmed, and the run unlimited), again when the first alarm's exception was lost
where Python ignores it, and a timer set around it put back."""

from __future__ import annotations

import signal
import sys
import time
import weakref
from typing import Any

import pytest

from fxcore.worker.inputs.eager_run import OutOfTime, time_limit


def test_a_run_that_outlasts_the_limit_is_out_of_time() -> None:
    started = time.monotonic()
    with pytest.raises(OutOfTime), time_limit(0.05):
        time.sleep(5)
    assert time.monotonic() - started < 4
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_an_alarm_lost_in_a_weakref_callback_is_repeated(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """A fake tensor's teardown runs weakref callbacks; an alarm that lands in one raises
    where CPython prints the exception and goes on (``sys.unraisablehook``). A run of
    ``export_python_data.py:ListedValues`` judged for a GPU went on so for 20 s, past the
    class's time-out (FX102), 1 run in 5."""
    lost: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", lost.append)

    class Held:
        pass

    held = Held()
    # The callback outlasts the limit: the alarm lands in it.
    reference = weakref.ref(held, lambda _: time.sleep(0.5))
    started = time.monotonic()
    with pytest.raises(OutOfTime), time_limit(0.1):
        del held
        time.sleep(3)
    assert time.monotonic() - started < 2.5
    assert [type(unraisable.exc_value) for unraisable in lost] == [OutOfTime]
    assert reference() is None
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_run_within_the_limit_meets_no_alarm_after_it() -> None:
    with time_limit(0.05):
        pass
    time.sleep(0.3)  # an alarm repeated after the block would raise here
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


@pytest.mark.parametrize("seconds", [0.0, -1.5])
def test_no_time_left_is_out_of_time_before_the_run(seconds: float) -> None:
    ran = []
    with pytest.raises(OutOfTime), time_limit(seconds):
        ran.append(True)
    assert ran == []
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_timer_set_around_it_is_put_back() -> None:
    fired = []
    previous = signal.signal(signal.SIGALRM, lambda *_: fired.append(True))
    try:
        signal.setitimer(signal.ITIMER_REAL, 30)
        with pytest.raises(OutOfTime), time_limit(0.05):
            time.sleep(5)
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 25 < left <= 30
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert fired == []
