"""The ``onnx`` capture mode: what ``torch.onnx.export(model, ..., dynamo=True)`` refuses
once torch.export has succeeded, without weights.

It takes the export mode's exported program of the same instance, on the same inputs (fake
tensors: ``ExportCapture`` keeps it on the target; the mode exports first where the export
mode has not run), then runs the exporter's own steps on it (``exporter``): the
decompositions for the configured opset (``onnx-opset``, else the exporter's default), the
registry look-up of every remaining operator (``operators``: FX601, FX602), the translation
into an ONNX model (``translation``: FX604, or FX605 where it needs tensor values) and a check
that dynamic dimensions stay dynamic (``dimensions``: FX603). Each problem is reported at the
user's line its node came from.

A class torch.export fails on is not checked further: ``torch.onnx.export(..., dynamo=True)``
stops at that first step. Where the export mode runs too, its failures are that mode's (said
once); where ONNX is the only mode asked, they are the ONNX verdict, at their lines, with the
export's codes and messages.
"""

from __future__ import annotations

import time
from typing import ClassVar

import torch

from fxcore.model.results import Failure, Hint, OnnxNode
from fxcore.worker.capture.export import graph
from fxcore.worker.capture.export.exporting import ExportCapture, quiet_torch
from fxcore.worker.capture.onnx import dimensions, exporting_flag, operators, translation
from fxcore.worker.capture.onnx.exporter import Exporter, exporter
from fxcore.worker.job.capture_target import CaptureRecord, CaptureTarget, ExportOutcome
from fxcore.worker.job.inputs_decision import InputsDecision
from fxcore.worker.job.job_context import JobContext

#: The note of an ONNX verdict that is torch.export's failures (ONNX the only mode asked).
EXPORT_STEP_FAILS = ("torch.onnx.export(..., dynamo=True) exports with torch.export first, "
                     "which fails here: these are torch.export's failures.")


class OnnxCapture:
    """The exporter's decomposition, registry look-up and translation of the export mode's
    program."""

    mode: ClassVar[str] = "onnx"
    #: It exports first, which runs ``forward``.
    needs_inputs: ClassVar[bool] = True

    def warm(self) -> None:
        """The export mode's warm-up, then the exporter's steps once on a small model, in
        the zygote: importing onnxscript and building the default opset's registry take
        2.8 s in a fresh process, the first decomposition 1.7 s (torch 2.13, onnxscript
        0.7), which every child forked afterwards would pay again."""
        ExportCapture().warm()
        found = exporter()
        if isinstance(found, str):
            return
        with torch.device("meta"):
            model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GELU())
            example = torch.empty(2, 4)
        with quiet_torch():
            program = torch.export.export(model, (example,), strict=False)
            decomposed = found.core._prepare_exported_program_for_export(
                program, registry=found.registry(found.default_opset))
            translation.translate(found, decomposed, found.default_opset)

    def capture(self, context: JobContext, target: CaptureTarget, inputs: InputsDecision, *,
                loop_of_calls: bool = True) -> CaptureRecord:
        found = exporter()
        if isinstance(found, str):
            return CaptureRecord(self.mode, not_checked=f"not checked for ONNX: {found}")
        opset = context.job.config.onnx_opset or found.default_opset
        if opset > found.max_opset:
            return CaptureRecord(self.mode, not_checked=(
                f"not checked for ONNX: onnx-opset = {opset}, but this torch's exporter "
                f"translates to opset {found.max_opset} at most"))
        outcome, notes = self._export_outcome(context, target, inputs)
        refined = dimensions.refined_by_exporter(outcome.record)
        if refined:
            return CaptureRecord(self.mode, failures=refined, notes=notes,
                                 seconds=outcome.record.seconds)
        if outcome.record.failures and "export" not in context.job.config.modes:
            # torch.export's verdict whole: its failures, and its "not checkable" where the
            # rest needs real data.
            return CaptureRecord(self.mode, failures=list(outcome.record.failures),
                                 not_checked=outcome.record.not_checked,
                                 notes=[*notes, EXPORT_STEP_FAILS],
                                 seconds=outcome.record.seconds)
        refused = _export_refusal(outcome)
        if refused is not None:
            return CaptureRecord(self.mode, not_checked=refused,
                                 seconds=outcome.record.seconds)
        assert outcome.program is not None
        started = time.perf_counter()
        with quiet_torch():
            record = self._checked(context, target, found, outcome.program, opset, started)
        record.notes[:0] = notes
        return record

    @staticmethod
    def _export_outcome(context: JobContext, target: CaptureTarget, inputs: InputsDecision
                        ) -> tuple[ExportOutcome, list[str]]:
        """The export mode's outcome on this instance in its current ``nn.Module`` mode:
        reused where that mode ran, made here otherwise; made again with
        ``torch.onnx.is_in_onnx_export()`` True where the code reads it. And notes."""
        if exporting_flag.reads_flag(target.module):
            missing = exporting_flag.missing_flag()
            if missing is None:
                with exporting_flag.onnx_exporting():
                    return ExportOutcome(*ExportCapture().exported(context, target, inputs)), []
            return ExportOutcome(*ExportCapture().exported(context, target, inputs)), [
                f"Exported with torch.onnx.is_in_onnx_export() False, which the code reads: "
                f"{missing}."]
        training = target.module.training
        if training not in target.exports:
            ExportCapture().capture(context, target, inputs)
        return target.exports[training], []

    def _checked(self, context: JobContext, target: CaptureTarget, found: Exporter,
                 program: torch.export.ExportedProgram, opset: int,
                 started: float) -> CaptureRecord:
        notes: list[str] = []
        onnx_graph: list[OnnxNode] = []
        onnx_node_count: int | None = None
        try:
            decomposed = found.core._prepare_exported_program_for_export(
                program, registry=found.registry(opset))
        except Exception as error:
            failure = context.exception_failure(
                translation.TRANSLATION_ERROR,
                f"The ONNX exporter's decompositions (opset {opset}) fail on this class: ",
                error, target.source.name_span)
            return CaptureRecord(self.mode, failures=[failure], notes=notes,
                                 seconds=time.perf_counter() - started)
        failures = self._node_failures(context, target, [
            (problem.node, problem.kind, problem.message)
            for problem in operators.untranslated(found, decomposed.graph_module, opset)])
        if not failures:
            translated = translation.translate(found, decomposed, opset)
            if translated.error is not None and translated.needs_data:
                stopped = self._node_failures(context, target, [(
                    translated.node, translation.NOT_CHECKABLE,
                    f"the ONNX translation of {self._named(translated.node)} needs a "
                    f"tensor's values ({translated.reason()})")])
                return CaptureRecord(self.mode, failures=stopped, notes=notes,
                                     seconds=time.perf_counter() - started,
                                     not_checked="not checkable for ONNX without real data: "
                                                 + stopped[0].message)
            if translated.error is not None:
                failures = self._node_failures(context, target, [(
                    translated.node, translation.TRANSLATION_ERROR,
                    f"The ONNX translation of {self._named(translated.node)} (opset {opset}) "
                    f"fails: torch.onnx.export(..., dynamo=True) stops here with "
                    f"{translated.reason()}")])
            elif translated.model is not None:
                onnx_node_count = len(translated.model.graph)
                onnx_graph = translation.onnx_nodes(translated.model)
                notes.append(f"The ONNX model has {onnx_node_count} nodes "
                             f"(opset {opset}, before the exporter's optimization).")
        failures.extend(context.failure(dimensions.SPECIALIZED, message, [],
                                        target.source.name_span)
                        for message in dimensions.specialized(program, decomposed))
        return CaptureRecord(
            self.mode,
            failures=failures,
            **graph.program_graph(decomposed, failures, context.is_workspace_path),
            seconds=time.perf_counter() - started,
            notes=notes,
            onnx_graph=onnx_graph,
            onnx_node_count=onnx_node_count,
        )

    @staticmethod
    def _named(node: torch.fx.Node | None) -> str:
        return "the model (its conversion to the opset)" if node is None \
            else f"`{operators.operator_name(node)}`"

    @staticmethod
    def _node_failures(context: JobContext, target: CaptureTarget,
                       problems: list[tuple[torch.fx.Node | None, str, str]]) -> list[Failure]:
        """A failure per operator and user line (a loop's ten calls of one operator are one
        problem), at the innermost workspace frame of the node's stack trace."""
        failures: list[Failure] = []
        seen: set[tuple[str, str, int, str]] = set()
        for node, kind, message in problems:
            stack = operators.node_stack(node) if node is not None else []
            failure = context.failure(kind, message, stack, target.source.name_span)
            key = (failure.kind, failure.path, failure.line, message)
            if key not in seen:
                seen.add(key)
                failures.append(failure)
        return failures

    def hints(self, context: JobContext, target: CaptureTarget, inputs: InputsDecision,
              record: CaptureRecord) -> list[Hint]:
        return []


def _export_refusal(outcome: ExportOutcome) -> str | None:
    """Why the ONNX export cannot be checked after torch.export's outcome, if it cannot:
    the export's own diagnostics (the export mode's) say where it fails."""
    record = outcome.record
    if record.not_checked is not None:
        return f"not checked for ONNX: torch.export is not checked ({record.not_checked})"
    if record.failures or outcome.program is None:
        first = record.failures[0] if record.failures else None
        where = f": {first.code} at line {first.line}" if first else ""
        return (f"not checked for ONNX: torch.onnx.export(..., dynamo=True) exports with "
                f"torch.export first, which fails on this class (see the export mode, "
                f"--mode export{where})")
    return None

