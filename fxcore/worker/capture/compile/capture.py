"""The ``compile`` capture mode: ``torch.compile(model, backend=<recording>, fullgraph=False)``
run once on the example inputs (batch size 2, usually on meta), which goes on past each graph
break by itself. Each break is read where dynamo logs it
(``InstructionTranslatorBase.log_graph_break``): its exception, ``gb_type`` (-> PyTorch's
``GBnnnn``) and user stack (``real_stack``), located at the innermost workspace frame. The
backend records the graphs it receives and returns them uncompiled, so nothing is compiled
or written.

Without that private hook the mode degrades to the first break only
(``fullgraph=True``) and says so in the failure's message.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import re
import time
import traceback
import warnings
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import torch
from torch import fx

from fxcore.results import Failure, Hint
from fxcore.rules import BY_CODE, CODE_OF_KIND
from fxcore.rules.compile import CODE_OF_GRAPH_BREAK_TYPE, graph_break_kind
from fxcore.worker.capture.compile.meta_values import meta_values
from fxcore.worker.capture.record import (
    CaptureRecord,
    CaptureTarget,
    NodeOrigin,
    RecordedFailure,
)
from fxcore.worker.context import JobContext, describe_exception
from fxcore.worker.locate import RawPosition, traceback_positions

NO_INPUTS = "not checkable: no example inputs"
#: A frame of a node's ``stack_trace`` (traceback text, outermost first).
_TRACE_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
_LOGGERS = ("torch._dynamo", "torch._inductor", "torch.fx", "torch._subclasses",
            "torch.fx.experimental.symbolic_shapes")


def _graph_break_hook() -> Any | None:
    """dynamo's class whose ``log_graph_break`` sees every break, or None in a torch
    without it."""
    try:
        from torch._dynamo.symbolic_convert import InstructionTranslatorBase
    except ImportError:
        return None
    return InstructionTranslatorBase if callable(
        getattr(InstructionTranslatorBase, "log_graph_break", None)) else None


def _positions(stack: Any) -> list[RawPosition]:
    """A ``traceback.StackSummary`` (outermost first) as raw positions."""
    return [RawPosition(frame.filename, frame.name, frame.lineno or 0,
                        getattr(frame, "end_lineno", None), getattr(frame, "colno", None),
                        getattr(frame, "end_colno", None))
            for frame in stack or ()]


def _break_failure(error: BaseException, reason: str) -> RecordedFailure:
    gb_type = getattr(error, "gb_type", None) or ""
    code = CODE_OF_GRAPH_BREAK_TYPE.get(gb_type)
    kind = graph_break_kind(code) if code in BY_CODE else "graph-break-unknown"
    text = str(getattr(error, "msg", None) or reason or describe_exception(error))
    first, explanation, hints = _summary(text)
    # The rule names the type; the explanation and hints are those dynamo formatted with
    # this break's context.
    detail = " ".join(part if part.endswith((".", "?", "!")) else part + "."
                      for part in [explanation or first, *hints])
    if kind == "graph-break-unknown":
        detail = f"{gb_type or type(error).__name__}: {first}" + (
            f". {explanation}" if explanation else "")
    message = (BY_CODE[CODE_OF_KIND[kind]].message or "{detail}").format(detail=detail)
    stack = getattr(error, "real_stack", None) or traceback.extract_tb(error.__traceback__)
    return RecordedFailure(kind, message, _positions(stack))


def _summary(text: str) -> tuple[str, str, list[str]]:
    """The first line of dynamo's message of a break or error, its "Explanation:" line
    (empty if none) and its "Hint:" lines, formatted for this break (the registry's are
    templates), without the debug context and stack it also carries."""
    lines = [line.strip() for line in text.strip().splitlines()]
    explanation = next((line.removeprefix("Explanation:").strip() for line in lines
                        if line.startswith("Explanation:")), "")
    hints = [line.removeprefix("Hint:").strip() for line in lines if line.startswith("Hint:")]
    return (lines[0] if lines else ""), explanation, hints


@contextlib.contextmanager
def _recording_breaks(hook: Any, breaks: list[RecordedFailure]) -> Iterator[None]:
    original: Callable[..., Any] = hook.log_graph_break

    def log_graph_break(self: Any, code_options: Any, reason: str, exc: Any) -> Any:
        if not getattr(exc, "logged", False):
            breaks.append(_break_failure(exc, reason))
        return original(self, code_options, reason, exc)

    hook.log_graph_break = log_graph_break
    try:
        yield
    finally:
        hook.log_graph_break = original


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


def example_tensors(target: CaptureTarget) -> dict[str, torch.Tensor]:
    """The example inputs on the device the model was built on; ones, as the meta stand-ins
    answer, so that a model built on CPU takes the same branches."""
    # Where its weights are: a factory builds on meta too, and only a constructor that needs
    # real tensors builds on CPU.
    weights = itertools.chain(target.model.parameters(), target.model.buffers())
    device = next((tensor.device for tensor in weights),
                  torch.device("cpu" if target.instantiated_on == "cpu" else "meta"))
    return {name: torch.ones(spec.shape, dtype=getattr(torch, spec.dtype), device=device)
            for name, spec in (target.example_inputs or {}).items()}


class CompileCapture:
    """``torch.compile`` with a recording backend: every graph break of one run."""

    mode: ClassVar[str] = "compile"
    #: Compiling runs ``forward``: its targets come with example inputs decided before capture.
    needs_inputs: ClassVar[bool] = True

    def capture(self, context: JobContext, target: CaptureTarget) -> CaptureRecord:
        if not target.example_inputs:
            return CaptureRecord(self.mode, not_checked=NO_INPUTS)
        graphs: list[fx.GraphModule] = []

        def recording_backend(graph_module: fx.GraphModule, _inputs: Any) -> Any:
            graphs.append(graph_module)
            return graph_module.forward

        hook = _graph_break_hook()
        breaks: list[RecordedFailure] = []
        ending_error: BaseException | None = None
        degraded: list[str] = []
        started = time.perf_counter()
        torch._dynamo.reset()  # the recompile limit otherwise falls back to eager silently
        with contextlib.ExitStack() as stack:
            stack.enter_context(_quiet())
            degraded += stack.enter_context(meta_values())
            if hook is not None:
                stack.enter_context(_recording_breaks(hook, breaks))
            else:
                degraded.append("dynamo's InstructionTranslatorBase.log_graph_break is "
                                "missing: only the first graph break (fullgraph=True)")
            compiled = torch.compile(target.model, backend=recording_backend,
                                     fullgraph=hook is None)
            try:
                with torch.no_grad():
                    compiled(**example_tensors(target))
            except BaseException as error:
                ending_error = error
        torch._dynamo.reset()
        seconds = time.perf_counter() - started
        # One per (kind, place, innermost frame): a break in a loop, or in a helper that
        # dynamo compiles again alone after the break in its caller, is one problem; two
        # library lines that break under one workspace line (a model class whose forward is
        # the library's) are two, as torch logs them.
        failures = context.located_failures(breaks, target.source, apart_by_origin=True)
        if ending_error is not None:
            failures.append(self._ending_failure(context, target, ending_error, hook is None))
        if degraded:
            note = " (fx-lsp: " + "; ".join(degraded) + ")"
            for failure in failures:
                failure.message += note
        return CaptureRecord(self.mode, failures=failures, graph_count=len(graphs),
                             node_origins=_node_origins(graphs, context), seconds=seconds)

    def _ending_failure(self, context: JobContext, target: CaptureTarget,
                        error: BaseException, first_break_only: bool) -> Failure:
        if first_break_only:
            unsupported = getattr(getattr(torch._dynamo, "exc", None), "Unsupported", ())
            if isinstance(error, unsupported):
                recorded = _break_failure(error, str(error))
                return context.located_failures([recorded], target.source)[0]
        first, explanation, _ = _summary(describe_exception(error))
        detail = first + (f" ({explanation})" if explanation else "")
        return context.failure(
            "compile-error", BY_CODE["FX502"].message.format(  # type: ignore[union-attr]
                detail=detail),
            _error_positions(error), target.source.name_span)

    def hints(self, context: JobContext, target: CaptureTarget,
              record: CaptureRecord) -> list[Hint]:
        """No checks of its own beyond the breaks."""
        return []


def _error_positions(error: BaseException) -> list[RawPosition]:
    """The user stack dynamo attached to a compile error, else its traceback."""
    stack = getattr(error, "real_stack", None)
    if stack:
        return _positions(stack)
    return traceback_positions(error.__traceback__)


def _node_origins(graphs: list[fx.GraphModule], context: JobContext) -> list[NodeOrigin]:
    """The workspace line each node of the graphs came from (dynamo's ``stack_trace``)."""
    origins = []
    for graph_module in graphs:
        for node in graph_module.graph.nodes:
            trace = node.meta.get("stack_trace")
            if not trace:
                continue
            lines = [(os.path.abspath(file), int(line))
                     for file, line in _TRACE_FRAME.findall(trace)
                     if context.is_workspace_path(file)]
            if lines:
                origins.append(NodeOrigin(node, lines[::-1]))
    return origins
