"""The record of a mode that runs ``forward`` for a class that raised the same error on every
input the inputs stage tried (``fxcore.worker.job.input_refusals``): that error, at its
line, is the verdict (FX408 under torch.export, FX509 under torch.compile), not "no example
inputs": real torch raises it on the CPU too, whatever the inputs (an installed dependency
lacks the function the code calls, torch refuses the operation)."""

from __future__ import annotations

from fxcore.worker.job.capture_target import CaptureRecord, CaptureTarget
from fxcore.worker.job.input_refusals import RaisedEverywhere
from fxcore.worker.job.job_context import JobContext


def raised_everywhere_record(context: JobContext, target: CaptureTarget, mode: str,
                             raised: RaisedEverywhere) -> CaptureRecord:
    """``mode``'s record: one failure of kind ``<mode>-raises-everywhere`` at the error's
    innermost workspace line, naming the inputs tried."""
    tried = ", ".join(f"{name}: {spec}" for name, spec in raised.specs.items())
    failure = context.exception_failure(
        f"{mode}-raises-everywhere",
        f"forward raises on every input tried ({raised.tried} inputs of different shapes, "
        f"the first {tried}), so torch.{mode} cannot run it here either: ", raised.error,
        target.source.name_span)
    return CaptureRecord(mode, failures=[failure])
