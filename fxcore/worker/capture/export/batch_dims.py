"""The batch and sequence dimensions the code specialises, without configuration (FX407).

A class that exports whole with static shapes, and has no ``dynamic`` dimensions configured,
is exported once more with the batch dimension of each tensor input named dynamic
(``torch.export.Dim("batch_x")``: the first, or the one its spec names), and its sequence
dimension too where the input's source says which that is (``TensorSpec.sequence_dim``:
token ids to an ``nn.Embedding``, an RNN's or attention's input, a documented or configured
``seq``; ``Dim("seq_x")``): what ``Dim.AUTO`` would silently fix to its example size,
torch then reports as a constraint violation, with its suggested fixes. Of the violations,
the specialisations (a fix ``batch_x = 4``) are reported at the user's line whose guard did
it (``dynamic.GuardRecorder``), with torch's fixes and the ``dynamic_shapes`` they make
(``torch.export.dynamic_shapes.refine_dynamic_shapes_from_suggested_fixes``). Ranges torch
narrows and relations between inputs are no specialisation: ``Dim.AUTO`` accepts them.

A dimension of size 0 or 1 is left static, as torch specialises those whatever the code does.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import torch

from fxcore.model.container_spec import InputSpec
from fxcore.model.job_spec import DynamicDim
from fxcore.model.tensor_spec import TensorSpec
from fxcore.worker.capture.export import dynamic
from fxcore.worker.job.capture_target import RecordedFailure
from fxcore.worker.job.job_context import describe_exception

KIND = "export-batch-specialised"
_FIX = re.compile(r"^\s*(\w+) = (\d+)\s*$")


def batch_dims(inputs: dict[str, Any], specs: dict[str, InputSpec]
               ) -> dict[str, dict[int, DynamicDim]]:
    """The batch dimension of each tensor input, and its sequence dimension where its spec
    says which that is, each of size 2 or more, as ``dynamic`` spells them."""
    found: dict[str, dict[int, DynamicDim]] = {}
    for argument, value in inputs.items():
        spec = specs.get(argument)
        if not isinstance(value, torch.Tensor):
            continue
        roles = {0: "batch"} if not isinstance(spec, TensorSpec) else \
            {spec.batch_dim: "batch", **({} if spec.sequence_dim is None
                                         else {spec.sequence_dim: "seq"})}
        dims = {index: DynamicDim(f"{role}_{argument}") for index, role in sorted(roles.items())
                if index < value.dim() and value.shape[index] >= 2}
        if dims:
            found[argument] = dims
    return found


def suggested_fixes(text: str) -> list[str]:
    """The lines under torch's "Suggested fixes:" of a constraint violation."""
    if "Suggested fixes:\n" not in text:
        return []
    block = text.split("Suggested fixes:\n", 1)[1].split("\n\n", 1)[0]
    return [line.strip() for line in block.splitlines() if " = " in line]


def specialised_names(text: str) -> dict[str, int]:
    """The dimensions torch suggests making a constant (``batch_x = 4``), with the constant."""
    return {match.group(1): int(match.group(2))
            for match in map(_FIX.match, suggested_fixes(text)) if match}


def refined_shapes(text: str, dims: dict[str, dict[int, DynamicDim]],
                   inputs: list[str]) -> dict[str, Any] | None:
    """The ``dynamic_shapes`` torch's suggested fixes make of the exported ones, or None
    where this torch has no ``refine_dynamic_shapes_from_suggested_fixes``."""
    refine: Callable[[str, Any], Any] | None = getattr(
        torch.export.dynamic_shapes, "refine_dynamic_shapes_from_suggested_fixes", None)
    if refine is None:
        return None
    # Only the fixes: torch.export appends advice after them that the parser reads as a fix.
    fixes = "Suggested fixes:\n" + "\n".join(f"  {fix}" for fix in suggested_fixes(text))
    try:
        refined = refine(fixes, dynamic.dynamic_shapes(dims, inputs))
    except Exception:  # torch's parser of its own message: a wording it does not take
        return None
    return {name: shape for name, shape in refined.items() if shape is not None}


def spelled(shapes: dict[str, Any]) -> str:
    """``{'x': {0: 4}}`` as code writes it: a ``Dim`` by its constructor."""
    def one(value: Any) -> str:
        if isinstance(value, dict):
            return "{" + ", ".join(f"{key!r}: {one(item)}" for key, item in value.items()) + "}"
        name = getattr(value, "__name__", None)
        return f"Dim({name!r})" if name is not None else repr(value)
    return one(shapes)


def specialisations(error: BaseException, dims: dict[str, dict[int, DynamicDim]],
                    inputs: list[str], recorder: dynamic.GuardRecorder
                    ) -> list[tuple[str, RecordedFailure | None]]:
    """Per specialised batch or sequence dimension, its message and its failure at the first
    guard that fixed it to its constant (else the first about it; None when none was
    recorded)."""
    text = describe_exception(error)
    constants = specialised_names(text)
    if not constants:
        return []
    refined = refined_shapes(text, dims, inputs)
    suggestion = f" torch suggests: {'; '.join(suggested_fixes(text))}" + (
        "." if refined is None else f", that is dynamic_shapes={spelled(refined)}.")
    found: list[tuple[str, RecordedFailure | None]] = []
    for argument, index, name in ((argument, index, dim.name)
                                  for argument, per_argument in dims.items()
                                  for index, dim in per_argument.items()):
        if name not in constants:
            continue
        source = f"L['{argument}'].size()[{index}]"
        about = [guard for guard in recorder.guards if source in guard.sources]
        pinned = re.compile(rf"Eq\((s\d+, {constants[name]}|{constants[name]}, s\d+)\)")
        guard = next((g for g in about if pinned.fullmatch(g.expression)), None) or \
            next(iter(about), None)
        what, unit = ("batch dimension", "size") if name.startswith("batch_") else \
            (f"sequence dimension (dimension {index})", "length")
        message = (f"With the {what} of '{argument}' dynamic (torch.export's Dim.AUTO), the "
                   f"code specialises it to {constants[name]}: the exported program takes "
                   f"only that {unit}.{suggestion}")
        found.append((message, None if guard is None else RecordedFailure(
            KIND, f"{message} (the guard torch added here: `{guard.expression}`)",
            guard.stack)))
    return found
