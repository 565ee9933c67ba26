"""The ``fx`` capture mode: ``torch.fx`` symbolic tracing with the recovering tracer
(``tracer``), which records each failure and goes on, so one pass finds them all.

Its own checks of a complete graph are the mis-traces (FX201-FX206, ``mistraces`` and
``capture.random_draws``): places where the graph traced without error but does not mean what the
code says.

A tensor the tracer does not trace (a buffer handed to a submodule as a constant, a tensor
``forward`` makes itself) is a real tensor under real torch.fx, whose values Python reads
(``if table.sum() > 0``) and the graph keeps as constants. fx-lsp's are meta tensors, so those
reads are stood in as the compile capture stands them in (``meta.values_read``), and the
verdict says where: otherwise the class would end at torch's "Tensor.item() cannot be called on
meta tensors", an error of fx-lsp's device, not of the code. Only the workspace's own reads are:
a library read keeps torch's error, which libraries catch and take another way on (transformers'
RoBERTa then reaches the line plain torch.fx stops at).
"""

from __future__ import annotations

import contextlib
import importlib
import math
import os
import time
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import torch
from torch import fx

from fxcore.model.instance_trust import instance_call, made_from, may_not_fit
from fxcore.model.results import Failure, Hint
from fxcore.worker.building.as_built import snapshot
from fxcore.worker.building.construction import resolve
from fxcore.worker.capture.fx import mistraces, plain_agreement
from fxcore.worker.capture.fx.computed_literals import computed_literals
from fxcore.worker.capture.fx.instance_fit import involves_traced_value
from fxcore.worker.capture.fx.libraries import on_library, recorded_cause
from fxcore.worker.capture.fx.tracer import (
    MESSAGES,
    PlainLengthError,
    RecoveringTracer,
    proxy_patches,
    recovering_tracer_class,
)
from fxcore.worker.capture.random_draws import draw_hints, draws_recorded
from fxcore.worker.devices import meta_branches
from fxcore.worker.devices.cuda_factories import cuda_factories_on_meta
from fxcore.worker.devices.fake_device import faked_while_traced
from fxcore.worker.job.capture_target import CaptureRecord, CaptureTarget, RecordedFailure
from fxcore.worker.job.consequences import places_of
from fxcore.worker.job.inputs_decision import InputsDecision
from fxcore.worker.job.job_context import JobContext, describe_exception
from fxcore.worker.meta.values_read import (
    StandIns,
    asking_line,
    has_no_data,
    is_meta,
    meta_values,
    read_places,
)
from fxcore.worker.running.seeding import drawn_states, seed_generators
from fxcore.worker.source.locate import traceback_positions
from fxcore.workspace.discovery import ClassSource

#: The kind of FX105: the error that ended the trace is the instance's, not torch.fx's.
DOES_NOT_FIT = "does-not-fit"


class FxCapture:
    """``torch.fx`` symbolic tracing, configured by ``[tool.fx-lsp]`` (``tracer``,
    ``leaf-modules``, ``autowrap-functions``, ``autowrap-modules``)."""

    mode: ClassVar[str] = "fx"

    def capture(self, context: JobContext, target: CaptureTarget, inputs: InputsDecision, *,
                loop_of_calls: bool = True) -> CaptureRecord:
        """``target`` traced symbolically: ``inputs`` play no part (no example is run)."""
        started = time.perf_counter()
        try:
            tracer = make_tracer(context)
        except BaseException as error:
            failure = context.exception_failure("error", "The tracer configuration failed: ",
                                                error, target.source.name_span)
            return CaptureRecord(self.mode, failures=[failure])
        ending_error: BaseException | None = None
        graph = None
        states = drawn_states()
        put_back = snapshot(target.module)
        with tracing(context, target.module) as stand_ins:
            try:
                graph = tracer.trace(target.module,
                                     concrete_args=target.concrete_args or None)
            except BaseException as error:
                ending_error = error
        drew_randomly = drawn_states() != states
        if tracer.recorded_failures or ending_error is not None:
            # Where plain torch.fx traces the class, the verdict is its own (plain_agreement).
            plain = plain_agreement.plain_trace(
                make_tracer(context), target.module, target.concrete_args or None, put_back,
                tracing(context, target.module, recovering=False))
            if plain is not None:
                tracer, graph, ending_error = plain.tracer, plain.graph, None
                stand_ins, drew_randomly = plain.stand_ins, plain.drew_randomly
        seconds = time.perf_counter() - started
        # Any failure inside einops is FX008, whatever the recovering tracer or the library
        # made of it.
        recorded = [on_library(item, context, recorded_cause(item))
                    for item in tracer.recorded_failures]
        failures = context.located_failures(recorded, target.source)
        not_fitting: str | None = None
        if ending_error is not None:
            ending = on_library(ending_failure(ending_error), context,
                                describe_exception(ending_error))
            if ending.kind == "error" and may_not_fit(target.arguments) \
                    and not involves_traced_value(ending_error, context.is_workspace_path,
                                                  context.sources.tree):
                ending, reason = not_fitting_failure(context, target, ending_error)
                # After a recovered failure the values may be the tracer's stand-ins, so the
                # error may be a consequence of the recovery: the class keeps the verdict of
                # the failure met first, and this one is a hint (FX105), never a failure of
                # tracing on an instance fx-lsp made up.
                not_fitting = None if failures else reason
            failure = context.failure(ending.kind, ending.message, ending.stack,
                                      target.source.name_span)
            failure.possible_consequence = bool(failures)
            if failure.possible_consequence:
                # Named by line: the error is often above them (in a helper declared first).
                failure.message = (f"(May be a consequence of recovering from "
                                   f"{places_of(failures, failure.path)}.) {failure.message}")
            if _raised_in_patch_function(ending_error):
                failure.message = (
                    f"torch.fx cannot set up tracing of a forward wrapped by a decorator that "
                    f"takes *args/**kwargs ({describe_exception(ending_error)}, raised by "
                    "torch.fx's "
                    "_patch_function, which rewrites the wrapper's code object). "
                    "Give the wrapper the forward's explicit arguments, or trace the "
                    "undecorated module."
                )
            failures.append(failure)
        for failure in failures:
            relocate_into_decorator(failure, target.cls, target.source, context.path)
        if not_fitting is not None:
            return CaptureRecord(self.mode, failures=failures, not_checked=not_fitting,
                                 seconds=seconds)
        graph_module = None
        if not failures and graph is not None:
            try:
                graph_module = fx.GraphModule(tracer.root, graph, target.cls.__name__)
            except Exception as error:  # torch.fx's code generation; plain tracing fails too
                failures.append(context.failure(
                    "error", f"torch.fx traced forward but cannot write the graph's Python "
                    f"code ({describe_exception(error)}): a name in the graph, such as a "
                    "submodule name given to add_module with quotes in it, cannot stand in "
                    "the source torch.fx generates. Rename it.",
                    [], target.source.name_span))
        return CaptureRecord(
            self.mode,
            failures=failures,
            graph=graph,
            root=tracer.root if graph is not None else None,
            graph_module=graph_module,
            node_origins=tracer.node_origins,
            module_order=tracer.module_order,
            parameter_order=tracer.parameter_order,
            seconds=seconds,
            drew_randomly=drew_randomly,
            notes=constant_read_notes(stand_ins),
        )

    def hints(self, context: JobContext, target: CaptureTarget, inputs: InputsDecision,
              record: CaptureRecord) -> list[Hint]:
        """FX201-FX206: where the graph traced without error but does not mean what the code
        says (``fxcore.worker.capture.fx.mistraces``, ``random_draws``)."""
        assert record.graph is not None
        model, concrete_args, source = target.module, target.concrete_args, target.source
        hints = mistraces.checkpoints(
            [line for origin in record.node_origins for line in origin.lines
             if not line[0].startswith("<")], context.sources)
        first_line = {origin.node: origin.lines[0] for origin in record.node_origins}

        def retrace() -> fx.Graph:
            # From the seeds the capture traced from: down the outcomes of the same draws, and
            # as plain torch.fx where the capture's graph is its (plain_agreement).
            seed_generators()
            tracer, recovering = make_tracer(context), not plain_agreement.is_plain(record.graph)
            tracer.recovers = recovering
            with tracing(context, model, recovering=recovering):
                return tracer.trace(model, concrete_args=concrete_args or None)

        if record.drew_randomly:
            # A retrace that fails (it did not before) still has the draws it met first.
            with draws_recorded(context.is_workspace_path) as draws, \
                    contextlib.suppress(Exception):
                retrace()
            hints += draw_hints(draws, context.sources)
        hints += mistraces.training_difference(model, record.graph, retrace, first_line.get,
                                               source, context.path, context.sources)
        forward = mistraces.forward_node(context.parsed(context.path).tree,
                                         target.cls.__name__)
        if forward is not None:
            # The file's lines as read once (``char_span`` indexes them by line number): a
            # copy up to each class's end made a file of thousands of classes quadratic.
            lines = context.sources.lines(context.path)
            hints += mistraces.none_checks(forward, record.graph, lines, context.path,
                                           concrete_args)
            hints += mistraces.unused_arguments(forward, record.graph, lines, context.path)
            hints += mistraces.concrete_arguments(forward, concrete_args, source.name_span,
                                                  lines, context.path)
        return hints


@contextlib.contextmanager
def tracing(context: JobContext, model: torch.nn.Module, *,
            recovering: bool = True) -> Iterator[StandIns]:
    """What a trace of ``model`` by the capture, and its retrace, run in: the recording Proxy
    (unless the trace is plain torch.fx's, ``plain_agreement``), the stand-ins for the
    workspace's reads of untraced meta tensors (yielded), in a GPU's view CUDA factories on
    meta, and for a class that branches on meta its tensors faked on the CPU
    (``faked_while_traced``), and what is computed from buffers of known data kept as the CPU
    computes it (``computed_literals``)."""
    with proxy_patches() if recovering else contextlib.nullcontext(), \
            meta_values(answers=workspace_reads(context)) as stand_ins, \
            cuda_factories_on_meta(), faked_while_traced(model), computed_literals():
        yield stand_ins


def workspace_reads(context: JobContext) -> Callable[[torch.Tensor], bool]:
    """The meta tensors whose values the stand-ins give: those the workspace's code reads
    (and the fake ones a class that branches on meta is traced with, ``faked_while_traced``)."""
    faked = meta_branches.active() is not None

    def answers(tensor: torch.Tensor) -> bool:
        return (has_no_data(tensor) if faked else is_meta(tensor)) \
            and context.is_workspace_path(asking_line()[0])
    return answers


def constant_read_notes(stand_ins: StandIns) -> list[str]:
    """What the verdict says of the values stood in for tensors the tracer did not trace."""
    if not stand_ins.read:
        return stand_ins.notes
    return [f"On meta, the values read from tensors torch.fx does not trace (constants, "
            f"buffers handed to a submodule) at {read_places(stand_ins.read)} were taken as "
            "one, and conditions on them as true the first time at a line: real torch.fx reads "
            "them from the real tensors, and its graph may keep another branch.",
            *stand_ins.notes]


def not_fitting_failure(context: JobContext, target: CaptureTarget,
                        error: BaseException) -> tuple[RecordedFailure, str]:
    """FX105 for an error on the instance that involves no traced value, and the class's
    reason for having no verdict: both name the instance's arguments and the error."""
    assert target.arguments is not None
    instance = instance_call(target.cls.__name__, target.arguments)
    detail = (f"{instance} ({made_from(target.arguments)}) raised "
              f"{describe_exception(error)}")
    key = f"{context.location.module_name}:{target.cls.__name__}"
    fix = (f' Give the real arguments under [tool.fx-lsp.modules."{key}"] (kwargs, call or '
           "factory) to trace the class.")
    message = MESSAGES[DOES_NOT_FIT].format(detail=detail)
    reason = (f"The instance {instance} ({made_from(target.arguments)}) does not fit it: "
              f"{describe_exception(error)}, an error that involves no traced value.")
    return (RecordedFailure(DOES_NOT_FIT, message + fix,
                            traceback_positions(error.__traceback__)), reason)


def ending_failure(error: BaseException) -> RecordedFailure:
    """The failure of the error that ended a trace: a plain Proxy's ``len`` error that torch's C
    code did not clear (``torch.tensor([x.shape[0] - 1])``) is the FX002 plain torch.fx stops
    at; anything else stopped tracing as itself."""
    stack = traceback_positions(error.__traceback__)
    if isinstance(error, PlainLengthError):
        return RecordedFailure("len", MESSAGES["len"].format(detail=""), stack)
    return RecordedFailure("error", f"Tracing stopped: {describe_exception(error)}", stack)


def make_tracer(context: JobContext) -> RecoveringTracer:
    """The configured ``Tracer`` class, made recovering, with the configured leaves and
    wrapped functions."""
    config = context.job.config
    base: type[fx.Tracer] = resolve(config.tracer) if config.tracer else fx.Tracer
    tracer_class = recovering_tracer_class(base)
    autowrap_modules = (math, *(importlib.import_module(m) for m in config.autowrap_modules))
    autowrap_functions = tuple(resolve(name) for name in config.autowrap_functions)
    try:
        tracer = tracer_class(autowrap_modules=autowrap_modules,
                              autowrap_functions=autowrap_functions)
    except TypeError:  # a custom tracer with its own constructor signature
        tracer = tracer_class()
    tracer.extra_leaf_modules = frozenset(config.leaf_modules)
    tracer.set_workspace_filter(context.is_workspace_path)
    tracer.set_sources(context.sources)
    return tracer


def _raised_in_patch_function(error: BaseException) -> bool:
    """True for torch.fx's failure to rewrite a ``*args``/``**kwargs`` wrapper's code."""
    tb = error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_name == "_patch_function":
            return True
        tb = tb.tb_next
    return False


def relocate_into_decorator(failure: Failure, cls: type, source: ClassSource, path: str) -> None:
    """Put a failure raised by a decorator's wrapper around ``forward`` (or while torch.fx
    patches that wrapper) on the decorated ``def forward``, naming the decorator: the
    wrapper's own lines are usually library code the user cannot change."""
    wrappers: list[Any] = []
    function = cls.forward
    while hasattr(function, "__wrapped__") and hasattr(function, "__code__"):
        wrappers.append(function)
        function = function.__wrapped__
    if not wrappers:
        return
    innermost = failure.frames[-1] if failure.frames else None
    in_wrapper = innermost is not None and any(
        innermost.path == os.path.abspath(wrapper.__code__.co_filename)
        and innermost.function == wrapper.__code__.co_name
        for wrapper in wrappers
    )
    if not in_wrapper and not failure.message.startswith("torch.fx cannot set up tracing"):
        return
    code = wrappers[0].__code__
    # functools.wraps copies __qualname__ from forward; the code object keeps the
    # wrapper's own name, such as "checked.<locals>.wrapper" (3.11+).
    decorator = getattr(code, "co_qualname", code.co_name).split(".<locals>")[0]
    where = f"{os.path.basename(code.co_filename)}:{code.co_firstlineno}"
    if source.forward is not None:
        span = source.forward
        failure.path = path
    else:
        span = source.name_span
    failure.line, failure.column = span.line, span.column
    failure.end_line, failure.end_column = span.end_line, span.end_column
    failure.message = f"In the decorator `{decorator}` around forward ({where}): " \
        + failure.message
