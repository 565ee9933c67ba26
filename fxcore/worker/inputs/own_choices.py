"""Whether an error that ended torch.export or torch.compile (FX499, FX502) comes from what
fx-lsp chose for the class rather than from the capture: example inputs it inferred, or an
instance it built from the class's defaults or guessed arguments (``may_not_fit``).

Decided by running the module once more, eagerly on the same inputs (on the meta device, as
``eager_run`` does, then on fake tensors, as the capture did): when it raises the same
exception at the same line, the capture is not what fails, and the error becomes the mode's
"does not fit" hint (FX406, FX504, as FX105 is torch.fx's); the class gets no verdict of that
mode. An error on inputs or an instance the workspace gave (configuration, annotations, a
builder, a call site, the parent's run) stays the mode's error, and so does one the eager run
does not repeat, or repeats only for want of real data (``meta_limits``): those say something
about the capture or the code.
"""

from __future__ import annotations

import dataclasses

from fxcore.model.instance_trust import instance_call, made_from, may_not_fit
from fxcore.model.results import Failure, ModuleResult
from fxcore.rules import BY_CODE, CODE_OF_KIND
from fxcore.worker.devices.fake_device import judged_device
from fxcore.worker.devices.held_tensors import fails_by_held_tensor, held_note
from fxcore.worker.inputs.eager_run import run_eagerly
from fxcore.worker.shared.capture_target import CaptureTarget
from fxcore.worker.shared.inputs_decision import InputsDecision
from fxcore.worker.shared.job_context import JobContext, describe_exception
from fxcore.worker.shared.locate import traceback_positions
from fxcore.worker.shared.meta_limits import needs_real_data
from fxcore.worker.shared.time_limit import OutOfTime

#: The failure kind of "any other error" of each capture mode that runs ``forward``.
CAPTURE_ERROR_KINDS = {"export": "export-error", "compile": "compile-error"}


def judged_on_own_choices(context: JobContext, mode: str, target: CaptureTarget,
                          inputs: InputsDecision, result: ModuleResult) -> ModuleResult:
    """``result`` (of capturing ``target`` on ``inputs``), or, when its capture error comes
    from fx-lsp's own choices, the class's "does not fit" verdict in ``mode``."""
    kind = CAPTURE_ERROR_KINDS.get(mode)
    ending = next((failure for failure in result.failures if failure.kind == kind), None)
    chosen = _chosen(target, inputs)
    if ending is None or not chosen or inputs.specs is None:
        return result

    def run() -> None:
        # On meta, then on fake tensors as the capture ran: a check a meta kernel lacks (no
        # output channel) is one real torch makes on the CPU too.
        for fake in (False, True):
            run_eagerly(target.module, target.instantiated_on, inputs.specs or {},
                        {**inputs.values, **target.concrete_args},
                        context.job.config.timeout / 8, fake)

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
            said = dataclasses.replace(ending, message=f"{ending.message}{held_note(held)}")
            return dataclasses.replace(result, failures=[
                said if failure is ending else failure for failure in result.failures])
        eager = _same_error(context, target, error, ending, mode, chosen)
        if eager is None:
            return result
        reason = (f"The {chosen} does not fit it: {describe_exception(error)}, raised when "
                  "it runs eagerly as well as under torch." + mode)
        # Graph breaks met before the error stay: they are the code's, on any inputs.
        return dataclasses.replace(
            result, status="not-traced", reason=reason,
            failures=[eager if failure is ending else failure for failure in result.failures])
    return result


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
