"""The time limit of a run of user code in a worker: ``time_limit`` raises ``OutOfTime`` in the
main thread once a run has used its share of the worker's CPU time, or its wall-clock backstop
(``budget_clock``). Every stage that runs the user's model shares it: the inputs stage's eager
runs, the compile capture's plan of read values, the parent's run."""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

from fxcore.worker.running.budget_clock import wall_clock_backstop

#: How often the alarm of ``time_limit`` is repeated after its time is up (in its clock's
#: seconds).
REPEAT_SECONDS = 0.1


class OutOfTime(BaseException):
    """Raised in the model's ``forward`` when its run takes too long. A BaseException, so
    that user code's ``except Exception`` does not swallow it."""



@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise ``OutOfTime`` in the main thread after ``seconds`` of the worker's CPU time
    (``fxcore.worker.running.budget_clock``: how far a search for inputs gets does not depend on the
    machine's load), or after its wall-clock backstop where the run waits without using the
    CPU (a sleep). A timer of either kind already set (a test runner's time-out) is put back
    afterwards with the time it has left, and is left alone when it would fire first; off the
    main thread the engine's time-out of the job is the only limit. No time left
    (``seconds <= 0``) is out of time at once: a timer set to 0 is a timer disarmed.

    The alarm repeats every ``REPEAT_SECONDS`` (of its clock) until the block ends: an
    ``OutOfTime`` raised where Python ignores exceptions (a weakref callback, ``__del__``: a
    fake tensor's teardown runs many) is printed and lost, and a one-shot alarm then let the
    run go on unlimited. A context that puts torch's state back belongs outside the block.
    Nor does an alarm raise in the code that arms and disarms the timers (``_arming``): raised
    there it skipped the disarming, and the alarm, repeated, raised in whatever ran next."""
    if seconds <= 0:
        raise OutOfTime
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    running = True

    def out_of_time(_signum: int, frame: FrameType | None) -> None:
        # Not an alarm handled once the block has ended, nor one that lands as the timers
        # are armed or disarmed: it repeats, and lands in the run.
        if running and not _arming(frame):
            raise OutOfTime

    with _timer(signal.ITIMER_PROF, signal.SIGPROF, time.process_time, seconds, out_of_time), \
            _timer(signal.ITIMER_REAL, signal.SIGALRM, time.monotonic,
                   wall_clock_backstop(seconds), out_of_time):
        try:
            yield
        finally:
            running = False


@contextlib.contextmanager
def _timer(which: int, signum: int, clock: Callable[[], float], seconds: float,
           handler: Callable[[int, Any], None]) -> Iterator[None]:
    """``handler`` on ``signum`` after ``seconds`` of timer ``which`` (counted as ``clock``
    counts), then every ``REPEAT_SECONDS``, until the block ends; a timer ``which`` already
    set is put back, or left alone where it would fire first."""
    outer_delay, outer_interval = signal.getitimer(which)
    if outer_delay and outer_delay <= seconds:
        yield
        return
    outer_handler = signal.getsignal(signum)
    started = clock()
    signal.signal(signum, handler)
    signal.setitimer(which, seconds, REPEAT_SECONDS)
    try:
        yield
    finally:
        signal.setitimer(which, 0)
        signal.signal(signum, signal.SIG_DFL if outer_handler is None else outer_handler)
        if outer_delay:
            left = max(outer_delay - (clock() - started), 0.001)
            signal.setitimer(which, left, outer_interval)


def _arming(frame: FrameType | None) -> bool:
    """Whether ``frame`` is (or is called by) ``time_limit``'s own code that arms or disarms
    its timers, or contextlib entering or leaving it."""
    while frame is not None:
        if frame.f_code in _ARMING_CODE:
            return True
        frame = frame.f_back
    return False


_ARMING_CODE = frozenset({
    time_limit.__wrapped__.__code__, _timer.__wrapped__.__code__,  # type: ignore[attr-defined]
    contextlib._GeneratorContextManager.__enter__.__code__,
    contextlib._GeneratorContextManager.__exit__.__code__,
})
