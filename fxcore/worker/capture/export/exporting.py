"""The ``export`` capture mode: non-strict ``torch.export.export`` of a built instance
(usually on the meta device) on fake CPU tensors made from the class's example inputs, its
weights faked alike (``fake``); with ``export-strict = true``, strict export too
(``strict``: what fails only there, FX405). A constant that torch lets through only because
the inputs are fake fails as real inputs make it fail (``fake_constants``).

Non-strict export runs the user's Python live, as torch.fx does, so a failure is located at
the innermost workspace frame of its traceback. An error that only the meta device causes (an
operator without a meta kernel on a tensor fx-lsp could not fake, say: ``meta_limits``) is
FX404 there, and the class is not checked rather than failed.

The data-dependent guards export would stop at are answered with guesses (``guesses``) so that
one pass finds them all; where this torch lacks that hook, the mode finds the first failure
only and the record says so. A class that exports whole, without ``dynamic`` configured, is
asked once more with its inputs' batch dimensions dynamic (``batch_dims``, FX407 hints).
"""

from __future__ import annotations

import contextlib
import io
import logging
import time
import warnings
from collections.abc import Iterator
from typing import ClassVar

import torch

from fxcore.model.job_spec import DynamicDim
from fxcore.model.results import Failure, Hint
from fxcore.rules import BY_CODE, CODE_OF_KIND
from fxcore.worker.capture.export import (
    batch_dims,
    dynamic,
    fake,
    fake_constants,
    graph,
    strict,
    torch_hooks,
)
from fxcore.worker.capture.export.failures import (
    ending_kind,
    ending_prefix,
    guess_failure,
    mark_after_guesses,
)
from fxcore.worker.capture.export.guesses import DataDependentGuesser
from fxcore.worker.capture.random_draws import draw_hints, draws_recorded
from fxcore.worker.job.capture_target import (
    CaptureRecord,
    CaptureTarget,
    ExportOutcome,
    RecordedFailure,
)
from fxcore.worker.job.inputs_decision import InputsDecision, no_inputs_reason
from fxcore.worker.job.job_context import JobContext
from fxcore.worker.meta import meta_limits
from fxcore.worker.running.seeding import drawn_states, seed_generators
from fxcore.worker.source.locate import traceback_positions

#: The kind of FX404: a line that needs real data on meta.
NOT_CHECKABLE = "export-not-checkable"
#: The reason of a class without example inputs: export runs forward, which needs them.
NO_INPUTS = ("not checkable under torch.export: no example inputs (give them under "
             '[tool.fx-lsp.modules."module:Class"] inputs, or annotate forward\'s arguments)')


class ExportCapture:
    """Non-strict ``torch.export.export(model, (), inputs, strict=False)`` on fake inputs."""

    mode: ClassVar[str] = "export"
    #: Export runs ``forward``: its targets come with example inputs decided before capture.
    needs_inputs: ClassVar[bool] = True

    def warm(self) -> None:
        """Export a small model on meta, once with static shapes and once with a dynamic
        dimension (measured on torch 2.13: a process's first export of a two-layer model
        takes 2.6 s, the next 0.1 s). The second runs the symbolic shapes that a
        data-dependent guard or a configured dynamic dimension brings: sympy imports part of
        itself on the first sum of symbols (``sympy.tensor.tensor`` and
        ``sympy.combinatorics``: about 0.1 s of CPU in each child that met one)."""
        with torch.device("meta"):
            model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
            example = torch.empty(2, 4)
        with quiet_torch():
            torch.export.export(model, (example,), strict=False)
            torch.export.export(model, (example,), strict=False,
                                dynamic_shapes=({0: torch.export.Dim("batch")},))

    def capture(self, context: JobContext, target: CaptureTarget, inputs: InputsDecision, *,
                loop_of_calls: bool = True) -> CaptureRecord:
        """The export's record; the outcome is kept on ``target`` for the onnx mode."""
        record, program = self.exported(context, target, inputs)
        target.exports[target.module.training] = ExportOutcome(record, program)
        return record

    def exported(self, context: JobContext, target: CaptureTarget, decided: InputsDecision
                 ) -> tuple[CaptureRecord, torch.export.ExportedProgram | None]:
        """The export's record on the inputs ``decided``, and its program where it ended
        with one."""
        if decided.specs is None:
            return CaptureRecord(self.mode, not_checked=no_inputs_reason(NO_INPUTS, decided)), \
                None
        unfakeable = torch_hooks.missing_fake_tensors()
        if unfakeable is not None:
            return CaptureRecord(self.mode, not_checked=f"not checkable under torch.export "
                                                        f"in this torch: {unfakeable}"), None
        started = time.perf_counter()
        mode = fake.new_mode()
        # Literals a parent passes go beside the tensors, as export specialises on them.
        inputs = {**fake.fake_inputs(mode, decided.specs), **decided.fresh_values()}
        guesser = DataDependentGuesser(context.is_workspace_path)
        missing = torch_hooks.missing_guess_hook()
        notes = [] if missing is None else [
            f"Only the first failure is found: this torch cannot be resumed after a "
            f"data-dependent guard ({missing})."]
        dims = context.module_config(target.cls.__name__).dynamic or {}
        recorder = dynamic.GuardRecorder(context.is_workspace_path)
        unrecorded = torch_hooks.missing_guard_log() if dims else None
        if unrecorded is not None:
            notes.append(f"A dynamic dimension this code specialises is reported at the "
                         f"class: this torch cannot say which line added a guard "
                         f"({unrecorded}).")
        program: torch.export.ExportedProgram | None = None
        ending_error: BaseException | None = None
        states = drawn_states()
        with quiet_torch(), fake.faked_weights(target.module, mode), \
                (guesser.installed() if missing is None else contextlib.nullcontext()), \
                (recorder.installed() if dims and unrecorded is None
                 else contextlib.nullcontext()):
            try:
                program = torch.export.export(
                    target.module, (), inputs, strict=False,
                    dynamic_shapes=dynamic.dynamic_shapes(dims, list(inputs)) if dims
                    else None)
            except BaseException as error:  # user code may raise anything, SystemExit too
                ending_error = error
        drew_randomly = drawn_states() != states
        failures = one_per_line(context.located_failures(
            [guess_failure(guess, guesser.guesses[:index])
             for index, guess in enumerate(guesser.guesses)], target.source))
        violated = dynamic.violations(ending_error, dims, recorder) \
            if ending_error is not None else []
        if violated:
            failures.extend(self._violation_failures(context, target, violated))
        elif ending_error is not None:
            limit = meta_limits.needs_real_data(ending_error) \
                if meta_limits.built_on_meta(target) else None
            if limit is not None:
                stopped = self._not_checkable_failure(context, target, ending_error, limit,
                                                      guesser)
                return CaptureRecord(self.mode, failures=[*failures, stopped],
                                     seconds=time.perf_counter() - started, notes=notes,
                                     not_checked=limit.reason("torch.export", stopped)), None
            undecided = meta_limits.undecided(ending_error)
            if undecided is not None:
                notes.append(undecided)
            failures.append(self._ending_failure(context, target, ending_error, guesser))
        if program is not None and self._untraced_constants(context, target, program, guesser,
                                                            failures, notes):
            program = None  # real export ends with that error: there is no program
        if context.job.config.export_strict:
            strict_failures, strict_notes = self._strict_pass(context, target, decided,
                                                              dims, failures)
            failures.extend(strict_failures)
            notes.extend(strict_notes)
        seconds = time.perf_counter() - started
        if program is None:
            return CaptureRecord(self.mode, failures=failures, seconds=seconds, notes=notes), None
        return CaptureRecord(
            self.mode,
            failures=failures,
            **graph.program_graph(program, failures, context.is_workspace_path),
            seconds=seconds,
            notes=notes,
            drew_randomly=drew_randomly,
        ), program

    @staticmethod
    def _strict_pass(context: JobContext, target: CaptureTarget, decided: InputsDecision,
                     dims: dict[str, dict[int, DynamicDim]],
                     non_strict: list[Failure]) -> tuple[list[Failure], list[str]]:
        """The failure only strict export has (FX405) and the notes about it."""
        assert decided.specs is not None
        unsupported = torch_hooks.missing_strict_export()
        if unsupported is not None:
            return [], [f"Strict export (export-strict) is not checked: {unsupported}."]
        with quiet_torch():
            error = strict.strict_export_error(target.module, decided.specs, dims,
                                               decided.fresh_values())
        if error is None:
            return [], []
        return strict.strict_only_failures(context, target, error, non_strict)

    @staticmethod
    def _untraced_constants(context: JobContext, target: CaptureTarget,
                            program: torch.export.ExportedProgram,
                            guesser: DataDependentGuesser, failures: list[Failure],
                            notes: list[str]) -> bool:
        """Adds the failures of the constants torch let through only because the inputs
        were fake (``fake_constants``), or a note that this torch cannot say; whether there
        were any."""
        recorded, unchecked = fake_constants.untraced_constants(program)
        if unchecked is not None:
            notes.append(f"Tensors torch.export did not trace are not looked for: real "
                         f"inputs make export reject them, and this torch cannot say which "
                         f"they are ({unchecked}).")
        located = context.located_failures(recorded, target.source)
        for failure in located:
            mark_after_guesses(failure, guesser.guesses)
        failures.extend(located)
        return bool(located)

    @staticmethod
    def _ending_failure(context: JobContext, target: CaptureTarget, error: BaseException,
                        guesser: DataDependentGuesser) -> Failure:
        kind = ending_kind(error)
        failure = context.exception_failure(kind, ending_prefix(kind), error,
                                            target.source.name_span)
        mark_after_guesses(failure, guesser.guesses)
        return failure

    @staticmethod
    def _not_checkable_failure(context: JobContext, target: CaptureTarget,
                               error: BaseException, limit: meta_limits.MetaLimit,
                               guesser: DataDependentGuesser) -> Failure:
        """FX404 at the line that needs real data."""
        message = BY_CODE[CODE_OF_KIND[NOT_CHECKABLE]].message or "{detail}"
        failure = context.failure(NOT_CHECKABLE, message.format(detail=limit.detail()),
                                  traceback_positions(error.__traceback__),
                                  target.source.name_span)
        mark_after_guesses(failure, guesser.guesses)
        return failure

    @staticmethod
    def _violation_failures(context: JobContext, target: CaptureTarget,
                            violated: list[tuple[str, RecordedFailure | None]]
                            ) -> list[Failure]:
        """FX403 at the line that added each violated dimension's guard, or at the class
        when no guard about it was seen."""
        located = context.located_failures(
            [recorded for _, recorded in violated if recorded is not None], target.source)
        unlocated = [context.failure(dynamic.KIND, message, [], target.source.name_span)
                     for message, recorded in violated if recorded is None]
        return located + unlocated

    def hints(self, context: JobContext, target: CaptureTarget, decided: InputsDecision,
              record: CaptureRecord) -> list[Hint]:
        """FX206 where the export drew from ``random`` (``capture.random_draws``): forward
        run once more, eagerly on fake inputs and weights from the seeds the export started
        from, which is what the non-strict export ran, with the draws watched. Its errors
        (a value only real data has) end the run, not the draws met before them."""
        if decided.specs is None:
            return []
        specialised = self._batch_hints(context, target, decided)
        if not record.drew_randomly:
            return specialised
        mode = fake.new_mode()
        inputs = {**fake.fake_inputs(mode, decided.specs), **decided.fresh_values()}
        seed_generators()
        with draws_recorded(context.is_workspace_path) as draws, quiet_torch(), \
                fake.faked_weights(target.module, mode), mode, contextlib.suppress(Exception):
            target.module(**inputs)
        return [*specialised, *draw_hints(draws, context.sources)]

    @staticmethod
    def _batch_hints(context: JobContext, target: CaptureTarget,
                     decided: InputsDecision) -> list[Hint]:
        """FX407 where the code specialises a batch or sequence dimension (``batch_dims``):
        asked of a class that exported whole without configured ``dynamic`` dimensions,
        whose answer that export is not."""
        assert decided.specs is not None
        if context.module_config(target.cls.__name__).dynamic is not None:
            return []  # configured dimensions are FX403's; `dynamic = {}`: static shapes
        mode = fake.new_mode()
        inputs = {**fake.fake_inputs(mode, decided.specs), **decided.fresh_values()}
        dims = batch_dims.batch_dims(inputs, decided.specs)
        if not dims:
            return []
        recorder = dynamic.GuardRecorder(context.is_workspace_path)
        logged = torch_hooks.missing_guard_log() is None
        with quiet_torch(), fake.faked_weights(target.module, mode), \
                (recorder.installed() if logged else contextlib.nullcontext()):
            try:
                torch.export.export(target.module, (), inputs, strict=False,
                                    dynamic_shapes=dynamic.dynamic_shapes(dims, list(inputs)))
                return []
            except BaseException as error:  # user code may raise anything, SystemExit too
                found = batch_dims.specialisations(error, dims, list(inputs), recorder)
        located = context.located_failures(
            [recorded for _, recorded in found if recorded is not None], target.source)
        unlocated = [context.failure(batch_dims.KIND, message, [], target.source.name_span)
                     for message, recorded in found if recorded is None]
        return [Hint(code=failure.code, kind=failure.kind, message=failure.message,
                     **failure.span()) for failure in [*located, *unlocated]]


def one_per_line(failures: list[Failure]) -> list[Failure]:
    """The first failure of each code on a line: two guards of one condition
    (``a.sum() > 0 and a.max() > 2``) are one problem to fix."""
    seen: set[tuple[str, int, str]] = set()
    kept = []
    for failure in failures:
        key = (failure.path, failure.line, failure.code)
        if key not in seen:
            seen.add(key)
            kept.append(failure)
    return kept


@contextlib.contextmanager
def quiet_torch() -> Iterator[None]:
    """torch.export logs warnings as it fails and prints the partial graph of a failed
    export to ``sys.stderr``; none of it is the user's to read in a terminal (the failures
    say where and why), so it is dropped."""
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)
    try:
        with warnings.catch_warnings(), contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            yield
    finally:
        logging.disable(previous)
