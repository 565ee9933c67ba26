"""The loop of calls' causes (``recompile_loop``) as diagnostics at the user's line: FX505
(every call, up to the limit), FX506 (every new size of a dimension), FX507 (every value of a
number argument), FX508 (every new length of a container of tensors), FX510 (a submodule attribute
swapped between calls), each with PyTorch's
guard and hint; and the note of a loop that ran out of time or that the machine's load
stopped."""

from __future__ import annotations

from fxcore.model.results import CODES, Hint
from fxcore.rules import BY_CODE
from fxcore.worker.capture.compile.loop_causes import LoopOutcome, Recompile
from fxcore.worker.capture.compile.recompile_loop import recompile_limit
from fxcore.worker.job.capture_target import CaptureTarget
from fxcore.worker.job.job_context import JobContext

KIND_OF_CAUSE = {"every-call": "recompiles-every-call", "every-size": "recompiles-every-size",
                 "every-number": "recompiles-every-number",
                 "every-length": "recompiles-every-length",
                 "swapped-module": "recompiles-swapped-module"}
#: The note of a class whose loop ran out of its time (CPU time: the same at any load).
UNFINISHED = ("the loop of calls that looks for recompilations ran out of CPU time after "
              "{calls} calls: the first call's verdict stands")
#: The note of a loop the machine's load stopped (its wall-clock backstop), its CPU time left.
SLOWED = ("the loop of calls that looks for recompilations was stopped after {calls} calls, "
          "its CPU time not spent: the machine was too loaded for it to end within twice as "
          "much wall-clock time; the first call's verdict stands")


def recompile_hints(context: JobContext, target: CaptureTarget,
                    outcome: LoopOutcome) -> list[Hint]:
    return [_hint(context, target, cause) for cause in outcome.causes]


def loop_notes(outcome: LoopOutcome | None) -> list[str]:
    if outcome is None or outcome.finished:
        return []
    return [outcome.not_run or (SLOWED if outcome.slowed else UNFINISHED).format(
        calls=outcome.calls)]


def _hint(context: JobContext, target: CaptureTarget, cause: Recompile) -> Hint:
    kind = KIND_OF_CAUSE[cause.kind]
    if cause.kind == "every-call":
        detail = (f"dynamo compiles the frame again on each call until recompile_limit "
                  f"({recompile_limit()}) is reached, then runs it eagerly; the guard that "
                  f"fails: {cause.guard}")
    else:
        detail = f"{cause.subject}: the guard that fails: {cause.guard}"
    message = (BY_CODE[CODES[kind]].message or "{detail}").format(detail=detail)
    located = context.failure(kind, message, cause.stack, target.source.name_span)
    return Hint(code=located.code, kind=kind, message=message, **located.span(),
                recompile=cause.about)
