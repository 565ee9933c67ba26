"""``time_limit``, the limit on an eager run of a model while its inputs are searched for:
out of time when the run outlasts it, at once when no time is left (a timer set to 0 would be
a timer disarmed, and the run unlimited), and a timer set around it put back."""

from __future__ import annotations

import signal
import time

import pytest

from fxcore.worker.inputs.eager_run import OutOfTime, time_limit


def test_a_run_that_outlasts_the_limit_is_out_of_time() -> None:
    started = time.monotonic()
    with pytest.raises(OutOfTime), time_limit(0.05):
        time.sleep(5)
    assert time.monotonic() - started < 4
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
