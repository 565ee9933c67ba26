"""``time_limit``, the limit on an eager run of a model while its inputs are searched for:
out of time when the run spends the limit in CPU time, not when it waits (a wait is stopped by
the wall-clock backstop), at once when no time is left (a timer set to 0 would be a timer
disarmed, and the run unlimited), again when the first alarm's exception was lost where Python
ignores it, and timers set around it put back."""

from __future__ import annotations

import signal
import sys
import time
import weakref
from typing import Any

import pytest

from fxcore.worker.running.time_limit import OutOfTime, time_limit

DISARMED = (0.0, 0.0)


def spin(seconds: float) -> None:
    """Use ``seconds`` of CPU time."""
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def assert_disarmed() -> None:
    assert signal.getitimer(signal.ITIMER_REAL) == DISARMED
    assert signal.getitimer(signal.ITIMER_PROF) == DISARMED


def test_a_run_that_spends_the_limit_in_cpu_time_is_out_of_time(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FX_LSP_TIMEOUT_SCALE", "100")  # no backstop before the run's end
    started = time.process_time()
    with pytest.raises(OutOfTime), time_limit(0.05):
        spin(5)
    assert time.process_time() - started < 4
    assert_disarmed()


def test_a_wait_is_not_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that sleeps uses next to no CPU time: six times the limit in wall-clock time is
    not out of time (the backstop, at a scale of 100, is 150 times the limit). A limit in
    wall-clock time let a loaded machine cut a search for inputs short."""
    monkeypatch.setenv("FX_LSP_TIMEOUT_SCALE", "100")
    with time_limit(0.05):
        time.sleep(0.3)
    assert_disarmed()


@pytest.mark.usefixtures("unscaled_timeouts")
def test_a_wait_is_stopped_by_the_wall_clock_backstop() -> None:
    """1.5 times the limit in wall-clock time (``budget_clock.WALL_CLOCK_FACTOR``), times the
    time-out scale, here 1."""
    started = time.monotonic()
    with pytest.raises(OutOfTime), time_limit(0.05):
        time.sleep(5)
    assert time.monotonic() - started < 4
    assert_disarmed()


def test_an_alarm_lost_in_a_weakref_callback_is_repeated(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """A fake tensor's teardown runs weakref callbacks; an alarm that lands in one raises
    where CPython prints the exception and goes on (``sys.unraisablehook``). A run of
    ``export_python_data.py:ListedValues`` judged for a GPU went on so for 20 s, past the
    class's time-out (FX102), 1 run in 5."""
    monkeypatch.setenv("FX_LSP_TIMEOUT_SCALE", "100")  # no backstop before the run's end
    lost: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", lost.append)

    class Held:
        pass

    held = Held()
    # The callback outlasts the limit: the alarm lands in it.
    reference = weakref.ref(held, lambda _: spin(0.5))
    started = time.process_time()
    with pytest.raises(OutOfTime), time_limit(0.1):
        del held
        spin(3)
    assert time.process_time() - started < 2.5
    assert [type(unraisable.exc_value) for unraisable in lost] == [OutOfTime]
    assert reference() is None
    assert_disarmed()


@pytest.mark.usefixtures("unscaled_timeouts")
def test_a_backstop_alarm_lost_in_a_weakref_callback_is_repeated(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The same for the wall-clock backstop, in a callback that waits."""
    lost: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", lost.append)

    class Held:
        pass

    held = Held()
    # The backstop's first alarm (0.6 s) lands in the callback's wait, however late a loaded
    # machine runs the callback.
    reference = weakref.ref(held, lambda _: time.sleep(2))
    started = time.monotonic()
    with pytest.raises(OutOfTime), time_limit(0.4):
        del held
        time.sleep(5)
    assert time.monotonic() - started < 2
    assert [type(unraisable.exc_value) for unraisable in lost] == [OutOfTime]
    assert reference() is None
    assert_disarmed()


@pytest.mark.usefixtures("unscaled_timeouts")
def test_a_run_within_the_limit_meets_no_alarm_after_it() -> None:
    with time_limit(0.05):
        pass
    spin(0.3)  # an alarm repeated after the block would raise here
    time.sleep(0.3)
    assert_disarmed()


@pytest.mark.parametrize("seconds", [0.0, -1.5])
def test_no_time_left_is_out_of_time_before_the_run(seconds: float) -> None:
    ran = []
    with pytest.raises(OutOfTime), time_limit(seconds):
        ran.append(True)
    assert ran == []
    assert_disarmed()


@pytest.mark.parametrize(("which", "signum", "run"), [
    (signal.ITIMER_REAL, signal.SIGALRM, lambda: time.sleep(5)),
    (signal.ITIMER_PROF, signal.SIGPROF, lambda: spin(5)),
], ids=["wall-clock", "cpu"])
@pytest.mark.usefixtures("unscaled_timeouts")
def test_a_timer_set_around_it_is_put_back(which: int, signum: int, run: Any) -> None:
    fired = []
    previous = signal.signal(signum, lambda *_: fired.append(True))
    try:
        signal.setitimer(which, 30)
        # What the kernel says is left. Linux adds a tick to a CPU timer each time it is set
        # (``set_cpu_itimer``: 30 reads back as 30.004 at 250 Hz), so the timer put back reads
        # up to that tick over what was left when less than a tick of CPU went by meanwhile (on
        # a loaded machine the run may end at its wall-clock backstop having used almost none).
        had, _ = signal.getitimer(which)
        tick = max(had - 30, 0.0)
        with pytest.raises(OutOfTime), time_limit(0.05):
            run()
        left, _ = signal.getitimer(which)
        assert had - 5 < left <= had + tick
    finally:
        signal.setitimer(which, 0)
        signal.signal(signum, previous)
    assert fired == []
    assert_disarmed()


@pytest.mark.parametrize("landing", [signal.ITIMER_PROF, signal.ITIMER_REAL],
                         ids=["cpu", "wall-clock"])
def test_an_alarm_that_lands_as_its_timer_is_armed_leaves_no_timer_armed(
        monkeypatch: pytest.MonkeyPatch, landing: int) -> None:
    """A limit of almost no time left (what is left of a search's budget) fires as the timer
    is armed, in ``time_limit``'s own code: its ``OutOfTime`` raised there skipped the code
    that disarms the timer, whose alarm, repeated, then raised in whatever the worker ran
    next. Here the signal is raised as the timer is armed; it is held until the run."""
    monkeypatch.setenv("FX_LSP_TIMEOUT_SCALE", "100")  # the backstop only when it lands
    real_setitimer = signal.setitimer
    signum = {signal.ITIMER_PROF: signal.SIGPROF, signal.ITIMER_REAL: signal.SIGALRM}[landing]

    def expiring_at_once(which: int, seconds: float, interval: float = 0.0) -> Any:
        previous = real_setitimer(which, seconds, interval)
        if which == landing and seconds > 0:
            signal.raise_signal(signum)
        return previous

    monkeypatch.setattr(signal, "setitimer", expiring_at_once)
    ran = []
    with pytest.raises(OutOfTime), time_limit(0.05):
        ran.append(True)
        spin(5)
    monkeypatch.undo()
    assert ran == [True]
    assert_disarmed()
    spin(0.3)  # a repeated alarm left armed would raise here
