"""The ``compile`` capture mode: ``torch.compile(model, backend=<recording>, fullgraph=False)``
run on the example inputs (batch size 2, usually on meta; then as a loop calls it:
``recompile_loop``), which goes on past each graph break by itself. Each break is read where
dynamo logs it (``InstructionTranslatorBase.log_graph_break``): its exception, ``gb_type``
(-> PyTorch's ``GBnnnn``) and user stack (``real_stack``), located at the innermost workspace
frame. The backend records the graphs it receives and returns them uncompiled, so nothing is
compiled or written; what they make from Python data keeps its values for the code dynamo
runs eagerly after them (``.tolist()`` at a break: ``meta.literal_values``). Without that
private hook the mode degrades to the first break only (``fullgraph=True``) and says so.

On meta, a meta tensor's truth and Python numbers are stood in for (``meta.values_read``): where
the run stood in numbers (``.item()``, ``.tolist()``) and the code's own checks and conditions
on them want others (``torch._check(n > 2)`` after the break), ``value_plan`` finds values they
accept and the class is compiled once more with those, the messages saying what was taken.

On meta, what only real data answers (an operator without a meta kernel, a meta tensor's
value: ``meta_limits``) ends the run where real torch on the CPU goes on: a graph break whose
cause is such an error (dynamo's fake run of an operator without a meta kernel, which a fake
CPU tensor runs) or the error of the eager run after a break. That line is FX503 and the class
is not checked; the breaks before it stay.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import logging
import os
import time
import traceback
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

import torch
from torch import fx
from torch._subclasses.fake_tensor import is_fake

from fxcore.model.container_spec import materialized
from fxcore.model.results import Failure, Hint
from fxcore.rules import BY_CODE, CODE_OF_KIND
from fxcore.rules.compile import graph_break_kind
from fxcore.worker.building.as_built import as_built
from fxcore.worker.capture.compile import meta_weights, recompile_loop, value_plan
from fxcore.worker.capture.compile.fake_cpu import (
    ON_FAKE_CPU,
    fake_cpu_reason,
    stopped_for_real_data,
)
from fxcore.worker.capture.compile.loop_breaks import while_test_note
from fxcore.worker.capture.compile.node_origins import node_origins
from fxcore.worker.capture.compile.recompile_hints import loop_notes, recompile_hints
from fxcore.worker.capture.compile.torch_hooks import (
    eager_code_modes,
    graph_break_hook,
    guard_latency_unmeasured,
    recording_breaks,
)
from fxcore.worker.capture.dynamo_errors import (
    error_positions,
    fake_run_error,
    graph_break_code,
    graph_break_type,
    sentences,
    stack_summary_positions,
    summary,
)
from fxcore.worker.devices.data_sized_outputs import data_sized_outputs
from fxcore.worker.devices.fake_device import judged_device, on_fake_device
from fxcore.worker.job.capture_target import (
    CaptureRecord,
    CaptureTarget,
    RecordedFailure,
)
from fxcore.worker.job.inputs_decision import InputsDecision, no_inputs_reason
from fxcore.worker.job.job_context import JobContext, describe_exception
from fxcore.worker.meta import meta_limits
from fxcore.worker.meta.literal_values import keeping_literals
from fxcore.worker.meta.refused_kernels import real_kernels
from fxcore.worker.meta.values_read import Place, meta_values
from fxcore.worker.running.seeding import seed_generators
from fxcore.worker.source.locate import RawPosition

NO_INPUTS = "not checkable: no example inputs"
#: The kind of FX503: a line that needs real data on meta.
NOT_CHECKABLE = "compile-not-checkable"
_LOGGERS = ("torch._dynamo", "torch._inductor", "torch.fx", "torch._subclasses",
            "torch.fx.experimental.symbolic_shapes")


def _break_failure(error: BaseException, reason: str) -> RecordedFailure:
    gb_type = graph_break_type(error)
    code = graph_break_code(error)
    kind = graph_break_kind(code) if code is not None else "graph-break-unknown"
    text = str(getattr(error, "msg", None) or reason or describe_exception(error))
    first, explanation, hints = summary(text)
    # The rule names the type; the explanation and hints are those dynamo formatted with
    # this break's context.
    detail = sentences([explanation or first, *hints])
    if kind == "graph-break-unknown":
        detail = f"{gb_type or type(error).__name__}: {first}" + (
            f". {explanation}" if explanation else "")
    message = (BY_CODE[CODE_OF_KIND[kind]].message or "{detail}").format(detail=detail)
    stack = getattr(error, "real_stack", None) or traceback.extract_tb(error.__traceback__)
    return RecordedFailure(kind, message, stack_summary_positions(stack))


def _record_break(breaks: list[RecordedFailure],
                  stops: list[tuple[RecordedFailure, meta_limits.MetaLimit]] | None,
                  exc: BaseException, reason: str) -> None:
    """Each break recorded; with ``stops`` (a class built on meta), a break that only the
    meta device causes is recorded there instead."""
    if getattr(exc, "logged", False):
        return
    limit = meta_limits.needs_real_data(exc) if stops is not None else None
    if limit is None:
        breaks.append(_break_failure(exc, reason))
        breaks[-1].message += while_test_note(breaks[-1]) or ""
        undecided = meta_limits.undecided(exc) if stops is not None else None
        if undecided is not None:
            breaks[-1].message += f" (fx-lsp: {undecided})"
    else:
        stack = getattr(exc, "real_stack", None) or traceback.extract_tb(exc.__traceback__)
        stops.append((_stop(limit, stack_summary_positions(stack)), limit))


def _stop(limit: meta_limits.MetaLimit, stack: list[RawPosition]) -> RecordedFailure:
    """FX503 at the line that needs real data."""
    message = BY_CODE[CODE_OF_KIND[NOT_CHECKABLE]].message or "{detail}"
    return RecordedFailure(NOT_CHECKABLE, message.format(detail=limit.detail()), stack)


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """torch's logs and warnings kept from the user's terminal."""
    levels = {name: logging.getLogger(name).level for name in _LOGGERS}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for name in _LOGGERS:
            logging.getLogger(name).setLevel(logging.CRITICAL + 1)
        try:
            yield
        finally:
            for name, level in levels.items():
                logging.getLogger(name).setLevel(level)


def example_tensors(target: CaptureTarget, inputs: InputsDecision) -> dict[str, Any]:
    """``inputs``' tensors on the device the model was built on; ones, as the meta stand-ins
    answer, so that a model built on CPU takes the same branches."""
    # Where its weights are: a factory builds on meta too, and only a constructor that needs
    # real tensors builds on CPU.
    weights = itertools.chain(target.module.parameters(), target.module.buffers())
    device = next((tensor.device for tensor in weights),
                  torch.device("cpu" if target.instantiated_on == "cpu" else "meta"))
    return {name: materialized(spec, lambda leaf: torch.ones(
        leaf.shape, dtype=getattr(torch, leaf.dtype), device=device))
        for name, spec in (inputs.specs or {}).items()}


class CompileCapture:
    """``torch.compile`` with a recording backend: every graph break of one run."""

    mode: ClassVar[str] = "compile"
    #: Compiling runs ``forward``: its targets come with example inputs decided before capture.
    needs_inputs: ClassVar[bool] = True

    def warm(self) -> None:
        """Compile a small model, on meta, with a graph break (measured on torch 2.13: a
        process's first compile of a two-layer model takes 0.9 s, the next 0.3 s), then call
        it with another batch size, as the loop of calls does: automatic dynamic shapes
        compile it again with a symbolic size, whose shape environment's first use in a
        process (sympy's lazy imports and caches) cost the loop's first recompilation about
        0.1 s more CPU than the next ones."""
        with torch.device("meta"):
            model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
            example, other_batch = torch.empty(2, 4), torch.empty(3, 4)

        def broken(x: torch.Tensor) -> torch.Tensor:
            x = model(x)
            torch._dynamo.graph_break()
            return model(x)

        torch._dynamo.reset()
        with _quiet(), guard_latency_unmeasured(), torch.no_grad():
            compiled = torch.compile(broken, backend=lambda graph_module, _inputs:
                                     graph_module.forward)
            compiled(example)
            compiled(other_batch)
        torch._dynamo.reset()

    def capture(self, context: JobContext, target: CaptureTarget, inputs: InputsDecision, *,
                loop_of_calls: bool = True) -> CaptureRecord:
        # ``{}``: a forward that takes nothing (a text encoder's learned embeddings) runs so.
        if inputs.specs is None:
            return CaptureRecord(self.mode, not_checked=no_inputs_reason(NO_INPUTS, inputs))
        hook = graph_break_hook()
        # A class judged for a GPU runs on fake tensors of that device, whose limits are
        # meta's (``fake_device``).
        built_on_meta = meta_limits.built_on_meta(target) or judged_device() is not None
        moved = not built_on_meta and meta_weights.is_large(target.module)
        on_meta = built_on_meta or moved
        started = time.perf_counter()
        # A quarter of the class's time (CPU time) for the loop of calls; none where not run
        # (an editor's stage of single calls, ``TraceJob.loop_of_calls``; or
        # ``FX_LSP_NO_RECOMPILE_LOOP=1``: one call alone, for benchmarks).
        loop = context.job.config.timeout / 4 if loop_of_calls and os.environ.get(
            "FX_LSP_NO_RECOMPILE_LOOP") != "1" else 0.0
        with meta_weights.weights_on_meta(target.module) if moved else contextlib.nullcontext(), \
                as_built(target.module) as put_back:
            def afresh() -> None:
                # Each later run meets the instance and generators as the first did, not a
                # cache forward set on itself holding an earlier run's meta or fake tensors.
                put_back()
                seed_generators()
            run = _run(target, inputs, hook, on_meta, loop_seconds=loop)
            runs = [run]  # every run's loop of calls is in the capture's seconds
            device = None
            fake_cpu = fake_cpu_reason(run.ending_error, run.stops) \
                if on_meta and judged_device() is None else None
            if fake_cpu is not None:
                # Tensors the code makes itself (torch.zeros(8), torch.randn(x.shape)) are CPU
                # tensors beside meta weights, and an operator without a meta kernel runs the
                # CPU's on fake CPU tensors: compiled again on those, as real torch runs them
                # on the CPU. For an operator, only where that goes further: a tensor fx-lsp
                # could not fake (held in a list) stays meta beside them.
                afresh()
                again = _run(target, inputs, hook, on_meta, None, torch.device("cpu"), loop)
                runs.append(again)
                if fake_cpu == ON_FAKE_CPU or not stopped_for_real_data(again.ending_error,
                                                                         again.stops):
                    run, device = again, torch.device("cpu")
                else:
                    fake_cpu = None
            if run.numbers_stood_in:
                # A value stood in for data may be one the code's own checks refuse: compiled
                # again with values they accept, where there are any (``value_plan``).
                afresh()
                plan = value_plan.plan_values(target, inputs, context.is_workspace_path,
                                              context.job.config.timeout / 4)
                if plan.taken:
                    afresh()
                    run = _run(target, inputs, hook, on_meta, plan.values, device, loop)
                    runs.append(run)
                    run.notes[:0] = plan.taken
                if plan.missing is not None:
                    run.notes.append(plan.missing)
        seconds = time.perf_counter() - started
        breaks, stops, ending_error = run.breaks, run.stops, run.ending_error
        degraded = [*run.notes]
        if hook is None:
            degraded.append("dynamo's InstructionTranslatorBase.log_graph_break is missing: "
                            "only the first graph break (fullgraph=True)")
        # One per (kind, place, innermost frame): a break in a loop, or in a helper that
        # dynamo compiles again alone after the break in its caller, is one problem; two
        # library lines that break under one workspace line (a model class whose forward is
        # the library's) are two, as torch logs them.
        failures = context.located_failures(breaks, target.source, apart_by_origin=True)
        if ending_error is not None:
            limit = meta_limits.needs_real_data(ending_error) if on_meta else None
            if limit is not None:
                stops.append((_stop(limit, error_positions(ending_error)), limit))
            else:
                undecided = meta_limits.undecided(ending_error)
                if undecided is not None:
                    degraded.append(undecided)
                failures.append(self._ending_failure(context, target, ending_error,
                                                     hook is None))
        not_checked = None
        if stops:
            # The first is where the run left real torch's path; a break there is followed by
            # the eager run's error at the same operator, whose traceback places it exactly.
            located = [(context.located_failures([recorded], target.source)[0], limit)
                       for recorded, limit in stops]
            first = located[0][0]
            stopped, limit = [(failure, limit) for failure, limit in located
                              if (failure.path, failure.line) == (first.path, first.line)][-1]
            failures.append(stopped)
            not_checked = limit.reason("torch.compile", stopped)
        if degraded:
            note = " (fx-lsp: " + "; ".join(degraded) + ")"
            for failure in failures:
                failure.message += note
        return CaptureRecord(self.mode, failures=failures, graph_count=len(run.graphs),
                             node_count=sum(len(graph.graph.nodes) for graph in run.graphs),
                             node_origins=node_origins(run.graphs, context), seconds=seconds,
                             loop_seconds=sum(each.loop_seconds for each in runs),
                             not_checked=not_checked,
                             notes=[*([fake_cpu] if fake_cpu is not None else []),
                                    *loop_notes(run.loop)],
                             hints=recompile_hints(context, target, run.loop)
                             if run.loop is not None and not_checked is None else [])

    def _ending_failure(self, context: JobContext, target: CaptureTarget,
                        error: BaseException, first_break_only: bool) -> Failure:
        if first_break_only:
            unsupported = getattr(getattr(torch._dynamo, "exc", None), "Unsupported", ())
            if isinstance(error, unsupported):
                recorded = _break_failure(error, str(error))
                return context.located_failures([recorded], target.source)[0]
        text = describe_exception(error)
        first, explanation, _ = summary(text)
        detail = fake_run_error(text) or first + (f" ({explanation})" if explanation else "")
        message = BY_CODE["FX502"].message or "{detail}"
        return context.failure("compile-error", message.format(detail=detail),
                               error_positions(error), target.source.name_span)

    def hints(self, context: JobContext, target: CaptureTarget, inputs: InputsDecision,
              record: CaptureRecord) -> list[Hint]:
        """The recompilations the loop of calls found."""
        return record.hints


@dataclass
class _Run:
    """What one compiled call of the model met."""

    graphs: list[fx.GraphModule] = field(default_factory=list)
    breaks: list[RecordedFailure] = field(default_factory=list)
    #: Breaks only the meta device causes, with what it lacks.
    stops: list[tuple[RecordedFailure, meta_limits.MetaLimit]] = field(default_factory=list)
    ending_error: BaseException | None = None
    #: What could not be set up, then what was assumed for meta values (a loop run once).
    notes: list[str] = field(default_factory=list)
    #: How many Python numbers of meta tensors were stood in for.
    numbers_stood_in: int = 0
    #: What the loop of calls after the first found; None where it did not run.
    loop: recompile_loop.LoopOutcome | None = None
    #: The loop's wall-clock seconds (``after_first_call``), a part of the capture's.
    loop_seconds: float = 0.0


def _run(target: CaptureTarget, decided: InputsDecision, hook: Any | None, on_meta: bool,
         planned: dict[Place, list[Any]] | None = None,
         device: torch.device | None = None, loop_seconds: float = 0.0) -> _Run:
    """``target``'s model compiled with a recording backend and called once on the inputs
    ``decided``, meta values stood in for (``planned`` where given); on fake tensors of
    ``device`` (a GPU's for a class judged for one) where given; then ``recompile_loop``'s calls."""
    run = _Run()
    observer: recompile_loop.Observer | None = None  # read by the backend

    def recording_backend(graph_module: fx.GraphModule, _inputs: Any) -> Any:
        run.graphs.append(graph_module)
        if observer is not None:
            observer.compiled()
        return keeping_literals(graph_module.forward)

    torch._dynamo.reset()  # the recompile limit otherwise falls back to eager silently
    with contextlib.ExitStack() as stack:
        stack.enter_context(_quiet())
        stack.enter_context(guard_latency_unmeasured())
        device = device or judged_device()
        if device is None:
            stand_ins = stack.enter_context(meta_values(planned))
            inputs = example_tensors(target, decided)
        else:
            mode = stack.enter_context(on_fake_device(target.module, device,
                                                      data_sizes=eager_code_modes()))
            # The values of the run's own fake tensors are stood in, as meta tensors' are;
            # dynamo's fake tensors, of its own mode, are left to dynamo.
            stand_ins = stack.enter_context(meta_values(
                planned, answers=lambda tensor: tensor.is_meta or (
                    is_fake(tensor) and tensor.fake_mode is mode)))
            inputs = {name: torch.ones(spec.shape, dtype=getattr(torch, spec.dtype),
                                       device=device)
                      for name, spec in (decided.specs or {}).items()}
        if eager_code_modes():
            # Code dynamo runs eagerly between graphs runs real kernels on the CPU where
            # a meta kernel refuses, as real torch's eager code does (``refused_kernels``),
            # and on fake tensors of a device takes the sizes meta gives (``data_sized_outputs``).
            stack.enter_context(real_kernels())
            if device is not None:
                stack.enter_context(data_sized_outputs())
        if hook is not None:
            stack.enter_context(recording_breaks(
                hook, functools.partial(_record_break, run.breaks,
                                        run.stops if on_meta else None)))
        observer = recompile_loop.observer(loop_seconds)
        compiled = recompile_loop.optimize(target.module, recording_backend, hook is None,
                                           observer)
        try:
            with torch.no_grad():
                compiled(**inputs, **decided.fresh_values())
        except BaseException as error:
            run.ending_error = error
        if observer is not None and run.ending_error is None and not run.stops:
            # What the loop compiles and breaks is not the first call's verdict.
            graphs, breaks = len(run.graphs), len(run.breaks)
            started = time.perf_counter()
            run.loop = recompile_loop.after_first_call(compiled, observer, target, decided,
                                                       inputs, loop_seconds, len(stand_ins.read))
            run.loop_seconds = time.perf_counter() - started
            del run.graphs[graphs:], run.breaks[breaks:], run.stops[:]
    torch._dynamo.reset()
    run.notes, run.numbers_stood_in = stand_ins.notes, stand_ins.numbers
    return run

