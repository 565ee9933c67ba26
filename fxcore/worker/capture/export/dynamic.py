"""Dynamic dimensions under torch.export (FX403): the configured dimensions become
``torch.export.Dim``s of ``dynamic_shapes``, and when export reports that the code
specialises or limits one, the failure is placed at the user's line that added the guard.

torch's "Constraints violated (batch)!" error carries no location, so ``GuardRecorder``
records every guard as the shape environment logs it (``ShapeEnv._log_guard``, private to
torch: ``torch_hooks.missing_guard_log`` says whether this torch has it) with the live stack
and the input dimensions it is about.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from fxcore.model.job_spec import DynamicDim
from fxcore.worker.capture.export.torch_hooks import ShapeEnv
from fxcore.worker.job.capture_target import RecordedFailure
from fxcore.worker.job.job_context import describe_exception
from fxcore.worker.source.locate import RawPosition, stack_positions

KIND = "export-dynamic-constraint"
_VIOLATED = re.compile(r"Constraints violated \(([^)]*)\)!")


def dynamic_shapes(dynamic: dict[str, dict[int, DynamicDim]],
                   inputs: list[str]) -> dict[str, dict[int, Any] | None]:
    """``dynamic_shapes`` for ``torch.export.export``: one ``Dim`` per name (dimensions that
    share a name are one), None for the inputs with no dynamic dimension."""
    dims: dict[str, Any] = {}
    for per_argument in dynamic.values():
        for dim in per_argument.values():
            if dim.name not in dims:
                dims[dim.name] = torch.export.Dim(dim.name, min=dim.min, max=dim.max)
    shapes: dict[str, dict[int, Any] | None] = dict.fromkeys(inputs)
    for argument, per_argument in dynamic.items():
        shapes[argument] = {index: dims[dim.name] for index, dim in per_argument.items()}
    return shapes


@dataclass
class Guard:
    """A guard as the shape environment added it: its expression, the input dimensions it
    is about (as torch names them, ``L['x'].size()[0]``) and the live stack, outermost
    first."""

    expression: str
    sources: set[str]
    stack: list[RawPosition]


class GuardRecorder:
    """Records the guards added while workspace code is on the stack."""

    def __init__(self, is_workspace_path: Callable[[str], bool]) -> None:
        self._is_workspace_path = is_workspace_path
        self.guards: list[Guard] = []

    @contextmanager
    def installed(self) -> Iterator[None]:
        original = ShapeEnv._log_guard
        recorder = self

        def log_guard(shape_env: Any, prefix: str, guard: Any, *args: Any,
                      **kwargs: Any) -> Any:
            recorder.record(shape_env, guard)
            return original(shape_env, prefix, guard, *args, **kwargs)

        ShapeEnv._log_guard = log_guard  # type: ignore[method-assign]
        try:
            yield
        finally:
            ShapeEnv._log_guard = original  # type: ignore[method-assign]

    def record(self, shape_env: Any, guard: Any) -> None:
        stack = stack_positions(sys._getframe(2))
        if not any(self._is_workspace_path(p.filename) for p in stack):
            return  # torch's own guards (on the inputs' ranges, say) are no user's line
        symbols = getattr(guard, "free_symbols", set())
        sources = {source for source, symbol in shape_env.source_to_var.items()
                   if symbol in symbols}
        self.guards.append(Guard(str(guard), sources, stack))


def violated_names(error: BaseException) -> list[str]:
    """The dynamic dimensions torch.export says the code violated, [] for another error."""
    match = _VIOLATED.search(describe_exception(error))
    return [name.strip() for name in match.group(1).split(",")] if match else []


def violations(error: BaseException, dynamic: dict[str, dict[int, DynamicDim]],
               recorder: GuardRecorder) -> list[tuple[str, RecordedFailure | None]]:
    """Per violated dimension, its failure at the first recorded guard about it (None when
    no guard about it was recorded, to be placed at the class); [] for another error."""
    text = describe_exception(error)
    places = {dim.name: f"L['{argument}'].size()[{index}]"
              for argument, per_argument in dynamic.items()
              for index, dim in per_argument.items()}
    found: list[tuple[str, RecordedFailure | None]] = []
    for name in violated_names(error):
        message = constraint_message(name, text)
        guard = next((g for g in recorder.guards if places.get(name) in g.sources), None)
        found.append((message, None if guard is None else RecordedFailure(
            KIND, f"{message} (the guard torch added here: `{guard.expression}`)",
            guard.stack)))
    return found


def constraint_message(name: str, text: str) -> str:
    """What torch says about dimension ``name`` and the fix it suggests."""
    word = re.compile(rf"\b{re.escape(name)}\b")
    said = [line.strip()[2:] for line in text.splitlines()
            if line.strip().startswith("- ") and word.search(line)]
    fixes = [line.strip() for line in text.splitlines()
             if line.strip().startswith(f"{name} = ")]
    message = f"The dynamic dimension '{name}' is not dynamic in this code: " + \
        " ".join(said or ["torch.export reports a constraint violation."])
    if fixes:
        message += f" torch suggests: {'; '.join(fixes)}."
    return message
