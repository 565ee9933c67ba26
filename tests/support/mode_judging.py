"""A compile verdict judged by ``module_modes.judged`` without a capture: which ``training``
flags it was made under."""

from __future__ import annotations

import torch

from fxcore.model.results import ModuleResult
from fxcore.worker.module_modes.judging import judged


def modes_judged(model: torch.nn.Module) -> tuple[list[bool], ModuleResult]:
    """The ``training`` flags compile's verdict was made under, and the verdict."""
    seen: list[bool] = []

    def verdict(loop: bool) -> ModuleResult:
        seen.append(model.training)
        return ModuleResult(path="m.py", line=1, column=1, end_line=1, end_column=2,
                            class_name="Net", qualified_name="m:Net", status="traceable",
                            mode="compile")

    return seen, judged("auto", "compile", model, verdict, seconds=60)
