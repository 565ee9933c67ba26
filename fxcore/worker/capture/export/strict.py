"""The strict pass of the export mode (``export-strict = true``): the same
``torch.export.export`` with ``strict=True``, on fresh fake inputs and weights faked alike
(``fake``), after the non-strict export.

Strict export traces ``forward`` with dynamo instead of running it as Python, so it fails
where dynamo cannot follow the code (a C function such as ``time.perf_counter``, a context
manager it does not know) although non-strict export goes through. Its first failure is
FX405 at the user's line, read from the stack dynamo attaches to its error
(``dynamo_errors``), unless non-strict export reports that line already. Strict export stops
at its first failure: it has no recovery.
"""

from __future__ import annotations

from typing import Any

import torch

from fxcore.model.container_spec import InputSpec
from fxcore.model.job_spec import DynamicDim
from fxcore.model.results import Failure
from fxcore.rules import BY_CODE
from fxcore.worker.capture.dynamo_errors import (
    error_positions,
    graph_break_code,
    has_user_stack,
    sentences,
    summary,
)
from fxcore.worker.capture.export import dynamic, fake
from fxcore.worker.job.capture_target import CaptureTarget
from fxcore.worker.job.job_context import JobContext, describe_exception

KIND = "export-strict-only"


def strict_export_error(model: torch.nn.Module, specs: dict[str, InputSpec],
                        dims: dict[str, dict[int, DynamicDim]],
                        values: dict[str, Any]) -> BaseException | None:
    """What ``torch.export.export(model, (), inputs, strict=True)`` raises on fake inputs
    made from ``specs`` and the literal ``values`` beside them, with the configured dynamic
    dimensions; None when it exports.

    A fake mode of its own: the non-strict export's shape environment holds its guesses."""
    mode = fake.new_mode()
    inputs = {**fake.fake_inputs(mode, specs), **values}
    with fake.faked_weights(model, mode):
        try:
            torch.export.export(model, (), inputs, strict=True,
                                dynamic_shapes=dynamic.dynamic_shapes(dims, list(inputs))
                                if dims else None)
        except BaseException as error:  # user code may raise anything, SystemExit too
            return error
    return None


def strict_only_failures(context: JobContext, target: CaptureTarget, error: BaseException,
                         non_strict: list[Failure]) -> tuple[list[Failure], list[str]]:
    """FX405 for the error strict export ended with, unless non-strict export fails at the
    same line; and the notes the verdict needs to be read right."""
    positions = error_positions(error)
    failure = context.failure(KIND, _message(error), positions, target.source.name_span)
    if any(context.is_workspace_path(position.filename) for position in positions):
        if any((f.path, f.line) == (failure.path, failure.line) for f in non_strict):
            return [], [f"Strict export stops at line {failure.line}, where non-strict export "
                        f"fails too: what fails only under strict export after it is found "
                        f"once that line is fixed."]
        return [failure], []
    why = "" if has_user_stack(error) else \
        " (dynamo attached no user stack to the error, `real_stack`)"
    if non_strict:
        return [], [f"Strict export fails too, at no line of this workspace{why}: not reported "
                    f"apart from non-strict export's failures."]
    return [failure], ([f"Strict export fails at no line of this workspace{why}: FX405 is "
                        f"placed at the class."] if why else [])


def _message(error: BaseException) -> str:
    """Rule FX405's message with dynamo's own words: its summary line, the graph break's
    code when it is one, the explanation and hints formatted for this place."""
    text = str(getattr(error, "msg", None) or describe_exception(error))
    first, explanation, hints = summary(text)
    code = graph_break_code(error)
    detail = sentences([part for part in (first + (f" ({code})" if code else ""),
                                          explanation, *hints) if part])
    return (BY_CODE["FX405"].message or "{detail}").format(detail=detail)
