"""The protocol of a capture mode: a built instance (``CaptureTarget``) and the example
inputs decided for it (``InputsDecision``) in, a ``CaptureRecord`` out (``record``). A capture
mode turns an ``nn.Module`` instance into a graph, or into located failures saying where and
why it cannot; a new mode is a new module in this package that implements ``Capture``, named
in ``modes``.
"""

from __future__ import annotations

from typing import ClassVar, Protocol

from fxcore.model.results import Hint
from fxcore.worker.job.capture_target import CaptureRecord, CaptureTarget
from fxcore.worker.job.inputs_decision import InputsDecision
from fxcore.worker.job.job_context import JobContext


class Capture(Protocol):
    """One way of capturing a model: ``mode`` names it in results and configuration.

    A mode that must run the model to capture it (torch.export, torch.compile) sets the class
    attribute ``needs_inputs = True``: its captures are then given the example inputs decided
    before capture (``fxcore.worker.inputs.deciding``), or why none were. A mode without it
    (fx) captures without: it is given what an earlier mode decided, or ``UNDECIDED``."""

    mode: ClassVar[str]

    def capture(self, context: JobContext, target: CaptureTarget, inputs: InputsDecision, *,
                loop_of_calls: bool = True) -> CaptureRecord:
        """Capture ``target`` (on ``inputs``, for a mode that runs ``forward``); failures are
        located with ``context``. Exceptions of user code become failures; an exception that
        escapes is a fault of the mode itself. ``loop_of_calls``: whether a mode that calls
        the captured model again (compile's recompilations) does so; False in a second
        ``nn.Module`` mode whose answer cannot differ (``module_modes.judging.judged``), and
        in a job of single calls (``TraceJob.loop_of_calls``)."""
        ...

    def hints(self, context: JobContext, target: CaptureTarget, inputs: InputsDecision,
              record: CaptureRecord) -> list[Hint]:
        """Checks of a complete capture that only this mode can make (for FX: where the graph
        does not mean what the code says), after the graph's own facts."""
        ...


def warm(capture: Capture) -> None:
    """Run ``capture``'s warm-up (an optional ``warm()`` method) in the zygote, before jobs
    are forked from it: a capture's first run in a process pays for torch's lazy imports and
    caches, which every child forked afterwards then inherits. It runs no user code."""
    warm_up = getattr(capture, "warm", None)
    if warm_up is not None:
        warm_up()


def needs_inputs(capture: Capture) -> bool:
    """Whether ``capture`` runs ``forward`` and so needs example inputs decided before it
    (a mode that does not declare ``needs_inputs``, such as fx or a test's, does not)."""
    return bool(getattr(capture, "needs_inputs", False))
