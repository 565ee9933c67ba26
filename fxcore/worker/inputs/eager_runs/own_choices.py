"""Whether an export or compile error (any failure of severity error) found on what fx-lsp
chose for the class, example inputs it inferred or an instance it built from the class's
defaults or guessed arguments (``may_not_fit``), is the class's: an error is shown only where
those run ``forward`` eagerly up to the failing line.

Decided by running the module once more, eagerly on the same inputs (on the meta device, as
``eager_run`` does, then on fake tensors, as the capture did), with a line tracer on the
failure's file (``lines_reached``); the run that raises decides:

- it runs, or it reaches the line of the capture's first error: the error is the class's, and
  one found on inferred inputs says so ("found on inputs it guessed, which run forward eagerly
  up to here"); a last error it meets too, after values fx-lsp stood in for tensor data
  (``values_read``: a dims list of ones), follows from that assumption and is dropped, leaving
  the data-dependent failure;
- it raises the capture's own error at its line: the error becomes the mode's "does not fit"
  hint (FX406, FX504, as FX105 is torch.fx's); the class gets no verdict of that mode;
- it raises before the capture's first error line: the inputs or the instance fail, not the
  capture: no verdict in that mode, information ("no inputs found that run forward").

A failure on tensor data (FX401, FX402) where the run read values from the elements of an
input fx-lsp guessed as a tensor (``sizes[0][0]``, ``for h, w in sizes``) is no verdict either:
the code may take Python numbers there (a list of sizes), which torch.export reads without
data; information ("no inputs found that decide it").

An error on inputs or an instance the workspace gave (configuration, annotations, a builder,
a call site, the parent's run) stays the mode's error, and so does one the eager run meets only
for want of real data (``meta_limits``, fake tensors' data-dependent refusals), but where
the run stopped so before the capture's line on inputs fx-lsp guessed and a small copy of the
model fails before it on real CPU tensors of them (``cpu_run``: float counts of a
``repeat_interleave``): no inputs run then.
"""

from __future__ import annotations

import dataclasses
import os

from fxcore.model.instance_trust import instance_call, made_from, may_not_fit
from fxcore.model.results import Failure, ModuleResult
from fxcore.rules import BY_CODE, CODE_OF_KIND
from fxcore.worker.devices.fake_device import judged_device
from fxcore.worker.devices.held_tensors import fails_by_held_tensor, held_note
from fxcore.worker.inputs.eager_runs.cpu_run import cpu_copy, run_on_cpu
from fxcore.worker.inputs.eager_runs.eager_run import run_eagerly
from fxcore.worker.inputs.eager_runs.lines_reached import lines_reached
from fxcore.worker.inputs.from_layers.first_layer import raised_at
from fxcore.worker.job.capture_target import CaptureTarget
from fxcore.worker.job.inputs_decision import InputsDecision
from fxcore.worker.job.job_context import JobContext, describe_exception
from fxcore.worker.meta.meta_limits import needs_real_data, wants_data
from fxcore.worker.meta.values_read import Place
from fxcore.worker.running.time_limit import OutOfTime
from fxcore.worker.source.locate import traceback_positions

#: What an error found on inputs fx-lsp guessed says of them, as fx-lsp's own words after a
#: message are written (``(fx-lsp: ...)``), apart from torch's.
_GUESSED_INPUTS = " (fx-lsp: found on inputs it guessed, which run forward eagerly up to here)"
#: The failure kinds of a capture stopped on tensor data.
_DATA_KINDS = frozenset({"export-data-dependent", "export-python-data"})
#: The failure kind of "any other error" of each capture mode that runs ``forward``.
CAPTURE_ERROR_KINDS = {"export": "export-error", "compile": "compile-error"}


def judged_on_own_choices(context: JobContext, mode: str, target: CaptureTarget,
                          inputs: InputsDecision, result: ModuleResult) -> ModuleResult:
    """``result`` (of capturing ``target`` on ``inputs``), or, when its error comes from
    fx-lsp's own choices, what the class gets instead: the "does not fit" hint in ``mode``
    where the eager run raises the capture's error at its line, no verdict where it raises
    before reaching the capture's first error, and the first error alone where the capture's
    last one only followed a value fx-lsp assumed (see the module's documentation)."""
    kind = CAPTURE_ERROR_KINDS.get(mode)
    errors = [failure for failure in result.failures if _is_error(failure)]
    chosen = _chosen(target, inputs)
    if kind is None or not errors or not chosen or inputs.specs is None:
        return result
    first = errors[0]
    ending = next((failure for failure in result.failures if failure.kind == kind), None)
    read: list[Place] = []
    reached: set[int] = set()
    elements: set[str] = set()

    def run() -> None:
        # On meta, then on fake tensors as the capture ran: a check a meta kernel lacks (no
        # output channel) is one real torch makes on the CPU too. What each run reached and
        # read is its own: the run that raises is the one that says where the inputs fail.
        for fake in (False, True):
            reached.clear()
            read.clear()
            elements.clear()
            with lines_reached(first.path, reached):
                run_eagerly(target.module, target.instantiated_on, inputs.specs or {},
                            {**inputs.values, **target.concrete_args},
                            context.job.config.timeout / 8, fake, read, elements)

    try:
        run()
    except OutOfTime:
        return result
    except Exception as error:  # user code may raise anything: is it the capture's error?
        try:
            held = fails_by_held_tensor(target.module, error, run) \
                if judged_device() is not None else []
        except OutOfTime:  # its run again, with the held tensors moved
            return result
        if held:  # the class's own failure on a GPU, whatever fx-lsp chose
            said = [dataclasses.replace(failure, message=f"{failure.message}{held_note(held)}")
                    if failure is ending else failure for failure in result.failures]
            return dataclasses.replace(result, failures=said)
        if needs_real_data(error) is not None or wants_data(error):
            # fx-lsp's way of running (a mask's count on fake tensors) says nothing of the
            # inputs: real data has what they lack. Where it stopped before the capture's
            # line on inputs fx-lsp guessed, a small model runs on real CPU tensors to see.
            refused = _refused_on_cpu(context, target, inputs, first) \
                if inputs.origin == "inferred" and first.line not in reached else None
            if refused is None:
                return result
            return _no_inputs_that_run(context, target, result, chosen, refused, first)
        eager = _same_error(context, target, error, ending, mode, chosen) \
            if ending is not None else None
        if eager is not None and ending is first:
            reason = (f"The {chosen} does not fit it: {describe_exception(error)}, raised "
                      "when it runs eagerly as well as under torch." + mode)
            # Graph breaks met before the error stay: they are the code's, on any inputs.
            return dataclasses.replace(
                result, status="not-traced", reason=reason,
                failures=[eager if failure is ending else failure
                          for failure in result.failures])
        # The line tracer saw every line that started, the one the error was raised at too.
        if first.line in reached:
            # The inputs run up to the capture's first error: it is the class's. A last error
            # the eager run meets too, after values fx-lsp assumed for tensor data, follows
            # from the assumption (a dims list of ones), not from the inputs.
            if eager is not None and read:
                result = dataclasses.replace(result, failures=[
                    failure for failure in result.failures if failure is not ending])
            return _kept(context, target, result, inputs, first, elements)
        return _no_inputs_that_run(context, target, result, chosen, error, first)
    return _kept(context, target, result, inputs, first, elements)


def _refused_on_cpu(context: JobContext, target: CaptureTarget, inputs: InputsDecision,
                    first: Failure) -> Exception | None:
    """What a copy of the model raises on real CPU tensors of ``inputs`` before the line of
    the capture's ``first`` error (``cpu_run``); None where it reaches it or runs, or where
    it is too large to copy or is judged for a GPU."""
    model = cpu_copy(target.module) if judged_device() is None else None
    if model is None:
        return None
    reached: set[int] = set()
    try:
        with lines_reached(first.path, reached):
            run_on_cpu(model, inputs.specs or {}, {**inputs.values, **target.concrete_args},
                       context.job.config.timeout / 8)
    except OutOfTime:
        return None
    except Exception as error:  # user code may raise anything: do the inputs fail?
        return error if first.line not in reached else None
    return None


def _kept(context: JobContext, target: CaptureTarget, result: ModuleResult,
          inputs: InputsDecision, first: Failure, elements: set[str]) -> ModuleResult:
    """``result``, whose inputs run up to its first error, said to be found on them; no
    verdict where that error is a failure on tensor data read from the elements of inputs
    fx-lsp guessed as tensors (``elements``: their names), which the code may take as Python
    numbers."""
    if inputs.origin != "inferred" or first.kind not in _DATA_KINDS or not elements:
        return _said_how(result, inputs)
    specs = inputs.specs or {}
    named = ", ".join(f"{name} ({specs[name]})" for name in sorted(elements) if name in specs)
    guessed = "a tensor" if len(elements) == 1 else "tensors"
    reason = (f"no inputs found that decide it: forward reads the values of {named}, which "
              f"fx-lsp guessed as {guessed}, up to the line "
              f"{os.path.basename(first.path)}:{first.line} its capture failed at "
              f"({first.code}) for want of tensor data; given Python numbers there (a list "
              "of sizes), the capture reads no data. Give the real inputs under "
              f'[tool.fx-lsp.modules."{context.location.module_name}:{target.cls.__name__}"] '
              "to check the class")
    return dataclasses.replace(result, status="not-traced", reason=reason, failures=[],
                               hints=[])


def _said_how(result: ModuleResult, inputs: InputsDecision) -> ModuleResult:
    """``result`` with each error saying that the inputs it was found on were fx-lsp's
    guess, where they were, and that they run ``forward`` up to it: a user judges an error at
    a glance by that. Inputs from the code or the user go unsaid (``judged_on`` in the JSON
    says it of every verdict), so that one line's error reached by several classes stays one
    diagnostic wherever it can."""
    if inputs.origin != "inferred":
        return result
    return dataclasses.replace(result, failures=[
        dataclasses.replace(failure, message=failure.message + _GUESSED_INPUTS)
        if _is_error(failure) else failure for failure in result.failures])


def _is_error(failure: Failure) -> bool:
    """A failure the class would be shown as an error for (not a graph break's warning)."""
    code = CODE_OF_KIND.get(failure.kind)
    rule = BY_CODE.get(code) if code is not None else None
    return rule is not None and rule.severity == "error" and not rule.information


def _no_inputs_that_run(context: JobContext, target: CaptureTarget, result: ModuleResult,
                        chosen: str, error: BaseException, first: Failure) -> ModuleResult:
    """The class without a verdict in the mode: what fx-lsp chose fails when it simply runs,
    before reaching the line the capture failed at, so the capture's errors say nothing of
    the class (information, never an error)."""
    where = raised_at(error, context.is_workspace_path)
    reason = (f"no inputs found that run forward: on the {chosen}, the module raises "
              f"{describe_exception(error)}{where} when run eagerly, before the line "
              f"{os.path.basename(first.path)}:{first.line} its capture failed at "
              f"({first.code}); give the real inputs or arguments under "
              f'[tool.fx-lsp.modules."{context.location.module_name}:{target.cls.__name__}"] '
              "to check the class")
    # Only what no input changes stays: none of the capture's failures is the class's here.
    return dataclasses.replace(result, status="not-traced", reason=reason, failures=[],
                               hints=[])


def _chosen(target: CaptureTarget, inputs: InputsDecision) -> str:
    """What fx-lsp chose for ``target`` and its ``inputs``, in words ("" when the workspace
    gave everything)."""
    chosen = []
    if inputs.origin == "inferred" and inputs.specs:
        spelled = ", ".join(f"{name}: {spec}" for name, spec in inputs.specs.items())
        chosen.append(f"inputs fx-lsp inferred ({spelled})")
    if may_not_fit(target.arguments):
        assert target.arguments is not None
        chosen.append(f"instance {instance_call(target.cls.__name__, target.arguments)} "
                      f"({made_from(target.arguments)})")
    return " and the ".join(chosen)


def _same_error(context: JobContext, target: CaptureTarget, error: Exception, ending: Failure,
                mode: str, chosen: str) -> Failure | None:
    """The "does not fit" failure of ``error``, when the eager run raised what ended the
    capture: the same exception type (or a base of it), located at the same line
    (``chosen``: ``_chosen``'s words for what fx-lsp chose)."""
    # By any of its classes: torch's fake tensors raise their own subclass where the capture's
    # error names the base (FakeTensorDeviceMismatchError, a RuntimeError, from torch 2.13).
    names = [cls.__name__ for cls in type(error).__mro__
             if issubclass(cls, Exception) and cls is not Exception]
    if needs_real_data(error) is not None or not any(name in ending.message for name in names):
        return None
    kind = f"{mode}-does-not-fit"
    rule = BY_CODE[CODE_OF_KIND[kind]]
    assert rule.message is not None
    key = f"{context.location.module_name}:{target.cls.__name__}"
    message = (rule.message.format(detail=f"{describe_exception(error)} on the {chosen}")
               + f' Give the real inputs or arguments under [tool.fx-lsp.modules."{key}"]'
               " to check the class.")
    located = context.failure(kind, message, traceback_positions(error.__traceback__),
                              target.source.name_span)
    if (located.path, located.line) != (ending.path, ending.line):
        return None
    return located
