"""Running a model eagerly on example inputs without computing anything: on meta tensors for
meta weights, on fake tensors for real ones, under a time limit. What the parent's run
(``parent``), the search for inputs a model runs on (``first_layer``) and the check of
fx-lsp's own choices (``own_choices``) share; it runs user code, so it is only ever called
inside a worker child.

An operator whose meta kernel refuses what the CPU kernel accepts (a grouped matmul in
float32, an operator without a meta kernel) runs on the CPU (``refused_kernels``), as real
torch runs it.

Values the code reads from those tensors (``.item()``, ``.tolist()``, ``int(t)``, ``float(t)``,
``if t:``) are stood in as the compile capture stands them in on meta (``values_read``: one,
true the first time at a line): real data has them, so a forward that reads one runs, where
otherwise every input tried would be refused for want of data."""

from __future__ import annotations

import contextlib
import copy
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from types import FrameType
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from fxcore.model.container_spec import InputSpec, materialized
from fxcore.model.results import InstantiatedOn
from fxcore.worker.devices.data_sized_outputs import data_sized_outputs
from fxcore.worker.devices.fake_device import judged_device, on_fake_device
from fxcore.worker.shared import meta_limits
from fxcore.worker.shared.budget_clock import wall_clock_backstop
from fxcore.worker.shared.literal_values import literal_tensors
from fxcore.worker.shared.refused_kernels import real_kernels
from fxcore.worker.shared.values_read import Place, has_no_data, meta_values

CPU = torch.device("cpu")


#: How often the alarm of ``time_limit`` is repeated after its time is up (in its clock's
#: seconds).
REPEAT_SECONDS = 0.1


class OutOfTime(BaseException):
    """Raised in the model's ``forward`` when its run takes too long. A BaseException, so
    that user code's ``except Exception`` does not swallow it."""


def run_eagerly(model: torch.nn.Module, instantiated_on: InstantiatedOn,
                specs: Mapping[str, InputSpec], concrete_args: dict[str, Any],
                seconds: float, fake: bool = False) -> list[Place]:
    """Call ``model`` once with empty tensors of ``specs`` (by ``forward`` argument; a
    container spec gives its container of them) and
    ``concrete_args``; the lines whose values read from tensor data were stood in. Raises
    ``OutOfTime`` after ``seconds`` of CPU time (``time_limit``), or what the model raises.
    ``fake``: meta weights too run under a fake tensor mode, as torch.export and
    torch.compile run them, whose checks a meta kernel may lack (a convolution with no output
    channel runs on meta and fails on fake tensors as on the CPU)."""
    try:
        return _run(model, instantiated_on, specs, concrete_args, seconds, fake)
    except Exception as error:
        # Tensors the code makes itself are CPU tensors beside meta weights; real torch runs
        # them on the CPU, and so does a run on fake CPU tensors.
        if judged_device() is not None or not meta_limits.collides_with_cpu(error):
            raise
        return _run(model, instantiated_on, specs, concrete_args, seconds, fake, CPU)


def _run(model: torch.nn.Module, instantiated_on: InstantiatedOn,
         specs: Mapping[str, InputSpec], concrete_args: dict[str, Any], seconds: float,
         fake: bool, device: torch.device | None = None) -> list[Place]:
    # The timer innermost: it is disarmed before any of these is put back (torch's methods,
    # the tensor modes), so that no alarm, repeated until then, lands in their clean-up.
    with meta_values(answers=has_no_data) as stand_ins, \
            tensor_mode(model, instantiated_on, fake, device) as on, real_kernels(), \
            literal_tensors(), torch.no_grad(), time_limit(seconds):
        # A copy of the literals each run: forward may append to a list it is given.
        model(**{name: materialized(spec, lambda leaf: torch.empty(
            leaf.shape, dtype=getattr(torch, leaf.dtype), device=on))
            for name, spec in specs.items()}, **copy.deepcopy(concrete_args))
    return stand_ins.read


@contextlib.contextmanager
def tensor_mode(root: torch.nn.Module, instantiated_on: InstantiatedOn,
                fake: bool = False, device: torch.device | None = None
                ) -> Iterator[torch.device]:
    """The device to make inputs on: meta for a root with meta weights (under a fake tensor
    mode if ``fake``); for one with real weights, CPU under a fake tensor mode, so that
    nothing is computed; for a class judged for a GPU, or given a ``device``, fake tensors of
    that device, weights too."""
    device = device or judged_device()
    if device is not None:
        with on_fake_device(root, device), data_sized_outputs():
            yield device
        return
    weights = [*root.parameters(), *root.buffers()]
    on_meta = weights[0].is_meta if weights else instantiated_on != "cpu"
    if on_meta and not fake:
        yield torch.device("meta")
        return
    with FakeTensorMode(allow_non_fake_inputs=True):
        yield torch.device("meta" if on_meta else "cpu")


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise ``OutOfTime`` in the main thread after ``seconds`` of the worker's CPU time
    (``fxcore.worker.shared.budget_clock``: how far a search for inputs gets does not depend on the
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
