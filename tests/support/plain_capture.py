"""Toy capture modes for the tests, importable by workers through ``FX_LSP_EXTRA_CAPTURES``
(``plain=plain_capture:PlainSymbolicTrace``) with this folder on ``PYTHONPATH``: a mode that
is not fx-lsp's own runs through the engine, the report, the CLI and the server unchanged."""

from __future__ import annotations

import os
import time
from typing import ClassVar

from torch import fx

from fxcore.model.results import Hint
from fxcore.worker.job.capture_target import CaptureRecord, CaptureTarget
from fxcore.worker.job.inputs_decision import InputsDecision
from fxcore.worker.job.job_context import JobContext


class PlainSymbolicTrace:
    """A toy capture mode: ``torch.fx.symbolic_trace`` with no recovery, so it reports at
    most one failure, unlocated, on the class."""

    mode: ClassVar[str] = "plain"

    def capture(self, context: JobContext, target: CaptureTarget, inputs: InputsDecision, *,
                loop_of_calls: bool = True) -> CaptureRecord:
        try:
            graph_module = fx.symbolic_trace(target.module)
        except Exception as error:
            failure = context.exception_failure("error", "symbolic_trace failed: ", error,
                                                target.source.name_span)
            return CaptureRecord(self.mode, failures=[failure])
        return CaptureRecord(self.mode, graph=graph_module.graph, root=graph_module,
                             graph_module=graph_module)

    def hints(self, context: JobContext, target: CaptureTarget, inputs: InputsDecision,
              record: CaptureRecord) -> list[Hint]:
        return []


class ExitsOnCrash(PlainSymbolicTrace):
    """A capture mode whose worker dies on a class named ``Crash``, as a segfaulting
    extension would: the engine must still give that class this mode's verdict."""

    mode: ClassVar[str] = "exits"

    def capture(self, context: JobContext, target: CaptureTarget, inputs: InputsDecision, *,
                loop_of_calls: bool = True) -> CaptureRecord:
        if target.cls.__name__ == "Crash":
            os._exit(3)
        return super().capture(context, target, inputs)


class WaitsForRelease(PlainSymbolicTrace):
    """A slow capture mode: each capture waits until the file ``FX_LSP_TEST_RELEASE`` names
    exists, so a test decides when this mode's verdicts arrive."""

    mode: ClassVar[str] = "slow"

    def capture(self, context: JobContext, target: CaptureTarget, inputs: InputsDecision, *,
                loop_of_calls: bool = True) -> CaptureRecord:
        release = os.environ["FX_LSP_TEST_RELEASE"]
        while not os.path.exists(release):
            time.sleep(0.02)
        return super().capture(context, target, inputs)
