"""What each phase of compile mode's loop of calls (``recompile_loop``) finds: a cause
(``Recompile``) where each new size, value or length after the first compiles again on a guard
about it (``each_new_one``), or where a loader's calls, which change together what shares a
size, do (``loader``); what the loop found (``LoopOutcome``); and which of a phase's calls is
the loop's last (``Follows``), whose compile no later call would meet."""

from __future__ import annotations

import enum
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fxcore.model.results import RecompileSubject
from fxcore.worker.capture.compile import recompile_reasons
from fxcore.worker.capture.compile.loop_inputs import Observer, Subject
from fxcore.worker.source.locate import RawPosition

#: Given a call's first failed guard, whether it is the loop's last call.
EndsLoop = Callable[[str], bool]
#: One call: its guard failures (newest cache entry first), None if it raised.
Attempt = Callable[..., list[str] | None]


@dataclass
class Recompile:
    """One cause: its kind, what recompiles (``dimension 0 of `x```), torch's guard, and the
    user's line where the guarded value comes from (outermost first; none where torch gives
    none)."""

    kind: str
    subject: str
    guard: str
    stack: list[RawPosition]
    #: What recompiles, for the hint's quick fixes; None for ``every-call``.
    about: RecompileSubject | None = None


@dataclass
class LoopOutcome:
    #: The frames dynamo compiled in the loop's calls (not those it met in the last call,
    #: which compiles nothing: a callback run meanwhile).
    frames: int = 0
    limit_reached: bool = False
    causes: list[Recompile] = field(default_factory=list)
    finished: bool = True
    calls: int = 0
    #: Why the loop did not run at all.
    not_run: str | None = None
    #: Stopped by the wall-clock backstop, its CPU time not spent: the machine's load.
    slowed: bool = False


class Follows(enum.Enum):
    """What follows a phase's calls in the loop."""

    CALLS = "more calls, whatever these find"
    NOTHING = "no call"
    #: No call where these find a cause of the phase's kind, which ends the phase.
    CAUSE_ENDS = "no call after a cause"

    def unless_cause(self) -> Follows:
        """What follows a phase's calls before the last subject's: what follows the phase
        once one of them finds a cause."""
        return Follows.CALLS if self is Follows.CALLS else Follows.CAUSE_ENDS


def call_bursts(attempt: Attempt,
            calls: list[tuple[dict[str, Any], dict[str, Any]]],
            ends_loop: Callable[[list[list[str]]], EndsLoop | None] | None = None
            ) -> list[list[str]] | None:
    """Each call's guard failures; None where ``forward`` refuses one of them: not a size or
    value the inputs allow. ``ends_loop``: given the bursts before the last call, whether
    that call's first failed guard makes it the loop's last call."""
    bursts: list[list[str]] = []
    for index, (inputs, arguments) in enumerate(calls):
        last = ends_loop(bursts) if ends_loop is not None and index == len(calls) - 1 else None
        burst = attempt(inputs, arguments, last)
        if burst is None:
            return None
        bursts.append(burst)
    return bursts


def each_new_one(attempt: Attempt, observer: Observer,
                  outcome: LoopOutcome, kind: str, subject: Subject,
                  calls: list[tuple[dict[str, Any], dict[str, Any]]],
                  follows: Follows = Follows.CALLS) -> None:
    """A cause of ``kind`` where, after the first new size or value (which makes it dynamic),
    each further one compiles again on a guard about it (not on some other value that changed
    between the calls, such as a flag ``forward`` flips). ``follows``: what follows these
    calls in the loop."""

    def ends_loop(before: list[list[str]]) -> EndsLoop | None:
        # The last call ends the loop where nothing follows, or where its first failed guard
        # makes this cause (the same test as below).
        if follows is Follows.NOTHING:
            return lambda _reason: True
        if follows is Follows.CAUSE_ENDS and all(
                burst and subject.guarded(burst[0]) for burst in before[1:]):
            return subject.guarded
        return None

    bursts = call_bursts(attempt, calls, ends_loop)
    if bursts is None:
        return
    if not all(burst and subject.guarded(burst[0]) for burst in bursts[1:]):
        resumed = _resumed_frame_guard(bursts[1:])
        if resumed is not None:
            outcome.causes.append(Recompile(kind, f"{subject.described}, in the frame resumed "
                                            "after a graph break", recompile_reasons.guard_words(
                                                resumed), recompile_reasons.user_stack(resumed),
                                            subject.about))
        return
    _add_cause(observer, outcome, kind, subject, bursts)


def _add_cause(observer: Observer, outcome: LoopOutcome, kind: str, subject: Subject,
               bursts: list[list[str]]) -> None:
    # The latest reason that names a line (torch 2.10 names none once a number is dynamic).
    stack = subject.pinned(observer.specialised) or next(
        (found for burst in reversed(bursts) if (found := recompile_reasons.user_stack(
            burst[0]))), subject.used)
    outcome.causes.append(Recompile(kind, subject.described, recompile_reasons.guard_words(
        bursts[-1][0]), stack, subject.about))


def loader(attempt: Attempt, observer: Observer,
            outcome: LoopOutcome, subjects: list[tuple[str, Subject]],
            calls: list[tuple[dict[str, Any], dict[str, Any]]]) -> None:
    """The loader's calls (``loop_inputs.loader_calls``): a cause of the first of ``subjects``
    (not found already) whose guard fails in every call after the first, on a cache entry one
    of these calls compiled, among all the entries' (dynamo names an entry's first failing
    guard only: a new list's items have static sizes, so one may fail first on the batch)."""
    # The loader's calls are the loop's last.
    bursts = call_bursts(attempt, calls, lambda _before: lambda _reason: True) if calls else None
    if bursts is None or not all(bursts[1:]):
        return
    entries_before = max((ids[1] for reason in bursts[0]
                          if (ids := recompile_reasons.compile_id(reason))), default=-1)
    found = {(cause.kind, cause.subject) for cause in outcome.causes}
    # Where torch pinned one of the values that change together (a dict keyed by the number).
    pinned = next((observer.specialised[subject.source] for _, subject in subjects
                   if subject.source in observer.specialised), None)
    for kind, subject in subjects:
        if (kind, subject.described) in found:
            return  # a phase of its own found it
        guarded = [[reason for reason in burst if subject.guarded(reason)]
                   for burst in bursts[1:]]
        if not all(guarded) or not any(
                (ids := recompile_reasons.compile_id(reason)) and ids[1] > entries_before
                for reasons in guarded for reason in reasons):
            continue
        stack = observer.specialised.get(subject.source) or next(
            (found for reasons in reversed(guarded) for reason in reasons
             if (found := recompile_reasons.user_stack(reason))), None) or pinned or subject.used
        outcome.causes.append(Recompile(kind, subject.described,
                                        recompile_reasons.guard_words(guarded[-1][0]), stack,
                                        subject.about))
        return


def _resumed_frame_guard(bursts: list[list[str]]) -> str | None:
    """The latest guard failure of a frame resumed after a graph break (dynamo names it
    ``torch_dynamo_resume_in_forward_at_64``) where each of ``bursts`` failed one, on the same
    guard numbers aside: the size reaches it as a number no automatic dynamic makes vary."""
    guards = []
    for burst in bursts:
        resumed = [reason for reason in burst if "torch_dynamo_resume_in_" in reason.split(
            "\n", 1)[0]]
        if not resumed:
            return None
        guards.append(resumed[0])
    shapes = {re.sub(r"\d+", "N", recompile_reasons.guard_words(guard)) for guard in guards}
    return guards[-1] if len(bursts) >= 2 and len(shapes) == 1 else None
