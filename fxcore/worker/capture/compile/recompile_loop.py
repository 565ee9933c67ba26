"""Compile mode calls ``forward`` as a training or serving loop does: the compiled module is
called again with the same inputs, then with three new sizes of the batch dimension and of each
other dimension the code specialises (``loop_inputs.new_sizes``) that the inputs allow (a size
``forward`` refuses is not one they allow), then with three new values of each Python number
argument, then with each list, tuple or dict of tensors one, two and three items longer, where
``forward``'s code takes it whole (``container_lengths``), then as a loader of variable-length
batches does (``loop_inputs.loader_calls``): the batch and, together, every number, list length
and dimension that share a size. The module's state is kept between calls, as a loop keeps it.
Dynamo's own hook reports each recompilation (``guard_fail_fn``, as ``TORCH_LOGS=recompiles``
prints it) and its frame counter counts the frames compiled.

What is normal is left alone: one recompilation per new dimension or number, after which
automatic dynamic shapes make it dynamic. A cause is found where that does not hold, one per
kind, and the loop moves on at the first of each kind:

- ``every-call``: calls with the same inputs recompile until ``recompile_limit``;
- ``every-size``: each new size of a dimension after the first compiles again, on a guard
  about that size (the code specialised it; a branch on a size compiles once more, then not);
- ``every-number``: each new value of a number argument after the first compiles again;
- ``every-length``: each new length of a container after the first compiles again (dynamo
  guards a container's length, and no automatic dynamic makes it vary);
- any of these three in the loader's calls, where what changes together is refused changed
  alone (``loop_causes.loader``: the first subject whose guard fails on a new cache entry
  each call);
- ``swapped-module``: a call failed the type or identity guard of a submodule attribute
  (``recompile_reasons.swapped_module``): the module's state, kept between calls as a loop
  keeps it, names another module than the compile saw (one cause per attribute, in any phase).

A call whose compile no later call would meet (the loop's last: ``Follows``) names its failed
guards and compiles nothing (``torch_hooks.stop_compiling``): what the loop reads of a call is
its failed guards, which dynamo names before it compiles.

The loop stops when its time is spent (``finished`` False): the first call's verdict stands.
Its time is the worker's CPU time (``fxcore.worker.running.budget_clock``: every thread of the
process), not wall-clock time: the same class makes the same calls on a loaded machine as on
an idle one.
A backstop in wall-clock time (``WALL_CLOCK_FACTOR`` times as much, times the time-out scale)
stops a loop the machine's load slows that far (``slowed`` True), before the host's time-out,
counted in wall-clock time, stops the whole class.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator
from typing import Any

import torch

from fxcore.model.results import RecompileSubject
from fxcore.worker.capture.compile import container_lengths, recompile_reasons
from fxcore.worker.capture.compile.loop_causes import (
    Attempt,
    EndsLoop,
    Follows,
    LoopOutcome,
    Recompile,
    each_new_one,
    loader,
)
from fxcore.worker.capture.compile.loop_inputs import (
    length_subject,
    loader_calls,
    new_sizes,
    new_values,
    number_arguments,
    number_subject,
)
from fxcore.worker.capture.compile.torch_hooks import stop_compiling
from fxcore.worker.job.capture_target import CaptureTarget
from fxcore.worker.job.inputs_decision import InputsDecision
from fxcore.worker.running.budget_clock import Budget
from fxcore.worker.source.locate import RawPosition

#: A call of the compiled module: tensors and other values by ``forward`` argument.
Call = Callable[[dict[str, Any], dict[str, Any]], None]


#: How much wall-clock time the loop may take, in multiples of its CPU time: a worker given
#: half a core or more ends by its CPU time, as on an idle machine.
WALL_CLOCK_FACTOR = 2.0

#: Why the loop does not run on a class that reads numbers out of tensors.
READS_DATA = ("the loop of calls that looks for recompilations was not run: forward reads "
              "values out of tensor data (.item(), .tolist(), a condition on a tensor), which "
              "tensors without data do not have")


class Observer:
    """What dynamo reports while the compiled module is called: each guard failure (one per
    cache entry tried, newest first) and, per compile, where it specialised."""

    def __init__(self) -> None:
        self.reasons: list[str] = []
        self.specialised: dict[str, list[RawPosition]] = {}
        #: How many graphs the backend received.
        self.compiles = 0
        #: Whether a frame beside forward's own was compiled (one resumed after a break).
        self.other_frames = False
        #: Whether the compiled module stops at its first graph break (``optimize``): reaching
        #: the recompile limit then fails the call.
        self.fullgraph = False
        self._ends_loop: EndsLoop | None = None
        self._compile_again: Callable[[], None] | None = None
        #: Whether the latest call compiled nothing, as the loop's last (``last_call``).
        self.stopped = False

    def guard_failed(self, failure: Any) -> None:
        reason = str(getattr(failure, "reason", failure))
        if self._ends_loop is not None and self._ends_loop(reason):
            self._compile_again = stop_compiling()
            self.stopped = self._compile_again is not None
        self._ends_loop = None  # the call's first failed guard decides
        self.reasons.append(reason)

    @contextlib.contextmanager
    def last_call(self, ends_loop: EndsLoop | None) -> Iterator[None]:
        """A call that, where ``ends_loop`` holds for its first failed guard, is the loop's last:
        its compiles, which no later call would meet, are not made."""
        self._ends_loop = None if self.fullgraph else ends_loop
        self.stopped = False
        try:
            yield
        finally:
            self._ends_loop = None
            if self._compile_again is not None:
                self._compile_again()
                self._compile_again = None

    def compiled(self) -> None:
        """Read in the backend, while dynamo's tracing context is still the compile's."""
        self.compiles += 1
        compile_id = torch._guards.CompileContext.current_compile_id()
        # A size may flow as data (``.tolist()``) into a frame resumed after a graph break.
        self.other_frames = self.other_frames or bool(getattr(compile_id, "frame_id", 0))
        tracing = torch._guards.TracingContext.try_get()
        shape_env = getattr(getattr(tracing, "fake_mode", None), "shape_env", None)
        self.specialised.update(recompile_reasons.specialisations(shape_env))


def observer(seconds: float) -> Observer | None:
    """The loop's observer where it runs: some time for it, and a torch that reports."""
    return Observer() if seconds > 0 and can_observe() else None


def optimize(model: torch.nn.Module, backend: Any, fullgraph: bool,
             observer: Observer | None) -> Any:
    """``torch.compile(model, backend=backend, fullgraph=fullgraph)``, through the dynamo entry
    point it calls, with ``guard_fail_fn`` where the loop will run (an ``observer``, only where
    ``can_observe()``); plain ``torch.compile`` where there is no loop."""
    if observer is None:
        return torch.compile(model, backend=backend, fullgraph=fullgraph)
    observer.fullgraph = fullgraph
    return torch._dynamo.optimize(backend, nopython=fullgraph,
                                  guard_fail_fn=observer.guard_failed)(model)


def can_observe() -> bool:
    """Whether this torch reports guard failures and counts frames as the loop reads them."""
    # ``optimize`` forwards ``*args, **kwargs`` to ``eval_frame._optimize`` in torch 2.13.
    eval_frame = getattr(torch._dynamo, "eval_frame", None)
    entries = [getattr(torch._dynamo, "optimize", None), getattr(eval_frame, "_optimize", None)]
    takes_hook = False
    for entry in entries:
        try:
            takes_hook = takes_hook or "guard_fail_fn" in inspect.signature(entry).parameters
        except (TypeError, ValueError):
            continue
    return takes_hook and hasattr(getattr(torch._dynamo, "utils", None), "counters")


def recompile_limit() -> int:
    config = torch._dynamo.config
    return int(getattr(config, "recompile_limit", None) or getattr(
        config, "cache_size_limit", 8))


def frames_compiled() -> int:
    return int(torch._dynamo.utils.counters["frames"]["ok"])


def after_first_call(compiled: Any, observer: Observer, target: CaptureTarget,
                     decided: InputsDecision, inputs: dict[str, Any], seconds: float,
                     stood_in: int) -> LoopOutcome:
    """The loop after the compiled ``target``'s first call on ``inputs`` (the tensors of the
    example inputs ``decided``): the number arguments ``forward`` takes passed as numbers,
    with the values the first call had. Not
    where the first call read values out of meta tensors (``stood_in`` lines: numbers, the
    truth of a condition): what runs and compiles again then depends on data the loop does not
    have, and the stand-ins answer differently after the first time."""
    if stood_in:
        return LoopOutcome(finished=False, not_run=READS_DATA)

    def call(tensors: dict[str, Any], values: dict[str, Any]) -> None:
        with torch.no_grad():
            compiled(**tensors, **values)

    values = decided.fresh_values()
    numbers = number_arguments(target.module, values)
    return run_loop(call, observer, inputs, {**values, **numbers}, numbers, seconds,
                    container_lengths.varied(target.module, inputs))


def run_loop(call: Call, observer: Observer, tensors: dict[str, Any],
             values: dict[str, Any], numbers: dict[str, int | float],
             seconds: float, containers: dict[str, list[RawPosition]] | None = None
             ) -> LoopOutcome:
    """The calls after a first one on ``tensors`` and ``values`` (made already), within
    ``seconds`` of the process's CPU time (and ``WALL_CLOCK_FACTOR`` times as much wall-clock
    time, scaled); ``containers``: the inputs among ``tensors`` whose length is varied, each
    with the place of the line that takes it whole."""
    outcome, limit = LoopOutcome(), recompile_limit()
    # CPU time: how far the loop gets is the code's answer, not the machine's load (on 2 shared
    # cores at load 3-8, wall-clock time cut the loop of 3 to 8 of twelve classes short).
    budget = Budget(seconds, WALL_CLOCK_FACTOR)
    start_frames = frames_compiled()
    dynamo_failed: list[BaseException] = []
    # Frames dynamo met in a call that compiled nothing (a weakref's callback that ran).
    not_compiled = [0]

    def attempt(inputs: dict[str, Any], arguments: dict[str, Any],
                ends_loop: EndsLoop | None = None) -> list[str] | None:
        """The guard failures of one call (newest cache entry first), None if it raised."""
        before, frames = len(observer.reasons), frames_compiled()
        outcome.calls += 1
        try:
            with observer.last_call(ends_loop):
                call(inputs, arguments)
        except Exception as error:
            if _dynamo_assertion(error):
                dynamo_failed.append(error)
            return None
        finally:
            if observer.stopped:
                not_compiled[0] += frames_compiled() - frames
        burst = observer.reasons[before:]
        _swapped_modules(outcome, burst)
        # Every cache entry of a frame failed, the last of them the limit's: dynamo then runs
        # the frame eagerly.
        if any((ids := recompile_reasons.compile_id(reason)) and ids[1] >= limit - 1
               for reason in burst):
            outcome.limit_reached = True
        return burst

    def in_time() -> bool:
        outcome.slowed = budget.slowed()
        outcome.finished = not budget.over()
        return outcome.finished

    loader_phase = loader_calls(tensors, values, numbers, containers or {})
    # What follows each phase's calls (a cause found ends its phase): the loop's last call
    # compiles nothing.
    after_lengths = Follows.CALLS if loader_phase[1] else Follows.NOTHING
    after_numbers = Follows.CALLS if containers else after_lengths
    _same_inputs(attempt, in_time, outcome, tensors, values, limit)
    for subject, calls in new_sizes(tensors, values, observer):
        # Where dynamo's own assertion failed on new sizes, every later new size compiles the
        # frame with symbolic sizes again and fails the same way (julius's SplitBands: 0.8 s).
        if not in_time() or dynamo_failed or any(cause.kind == "every-size"
                                                 for cause in outcome.causes):
            break
        each_new_one(attempt, observer, outcome, "every-size", subject, calls,
                      Follows.CALLS if numbers else after_numbers.unless_cause())
    for index, (name, value) in enumerate(numbers.items()):
        if not in_time() or any(cause.kind == "every-number" for cause in outcome.causes):
            break
        changed = [(tensors, {**values, name: new}) for new in new_values(value)]
        each_new_one(attempt, observer, outcome, "every-number", number_subject(name), changed,
                      after_numbers if index == len(numbers) - 1 else
                      after_numbers.unless_cause())
    for index, (name, used) in enumerate((containers or {}).items()):
        if not in_time() or any(cause.kind == "every-length" for cause in outcome.causes):
            break
        changed = [({**tensors, name: longer}, dict(values))
                   for longer in container_lengths.longer(tensors[name])]
        each_new_one(attempt, observer, outcome, "every-length", length_subject(name, used),
                      changed, after_lengths if index == len(containers or {}) - 1 else
                      after_lengths.unless_cause())
    if in_time():
        loader(attempt, observer, outcome, *loader_phase)
    outcome.frames = frames_compiled() - start_frames - not_compiled[0]
    return outcome


def _dynamo_assertion(error: BaseException) -> bool:
    """Whether ``error`` is dynamo's own failure (an assertion inside ``torch._dynamo``, such as
    "Expected SizeVariable" iterating a tensor of symbolic size), not ``forward`` refusing a
    size (a shape error, which dynamo raises as ``TorchRuntimeError``)."""
    internal = getattr(getattr(torch._dynamo, "exc", None), "InternalTorchDynamoError", ())
    if not isinstance(error, (AssertionError, internal)):
        return False
    innermost = error.__traceback__
    while innermost is not None and innermost.tb_next is not None:
        innermost = innermost.tb_next
    return innermost is not None and "_dynamo" in innermost.tb_frame.f_code.co_filename


def _swapped_modules(outcome: LoopOutcome, burst: list[str]) -> None:
    """A ``swapped-module`` cause for each submodule attribute whose type or identity guard
    failed in ``burst``, once per attribute."""
    for reason in burst:
        attribute = recompile_reasons.swapped_module(reason)
        subject = f"`self.{attribute}`"
        if attribute is None or any(cause.subject == subject for cause in outcome.causes):
            continue
        outcome.causes.append(Recompile("swapped-module", subject,
                                        recompile_reasons.guard_words(reason),
                                        recompile_reasons.user_stack(reason),
                                        RecompileSubject("module", attribute)))


def _same_inputs(attempt: Attempt, in_time: Callable[[], bool],
                 outcome: LoopOutcome, tensors: dict[str, Any], values: dict[str, Any],
                 limit: int) -> None:
    """Calls with the same inputs until one compiles nothing new or the limit is reached."""
    for _ in range(limit):
        if not in_time():
            return
        burst = attempt(tensors, dict(values))
        if not burst:
            return
        if outcome.limit_reached:
            outcome.causes.append(Recompile("every-call", "every call", recompile_reasons
                                            .guard_words(burst[0]),
                                            recompile_reasons.user_stack(burst[0])))
            return
