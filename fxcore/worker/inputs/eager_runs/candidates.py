"""The search loop that the searches over laid-out tensors (``layouts``) and over containers of
tensors (``container``) share: candidates in order, each run eagerly once (a candidate made
twice by different routes is not run again), the first the model runs on kept."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal, TypeVar

from torch import nn

from fxcore.model.container_spec import InputSpec
from fxcore.model.results import InstantiatedOn
from fxcore.worker.inputs.from_layers.first_layer import eager_error_before
from fxcore.worker.running.budget_clock import Budget

#: What the caller says of a candidate in its note (how it was made).
Made = TypeVar("Made")
Specs = Mapping[str, InputSpec]


def first_running(candidates: Iterable[tuple[Specs, Made]], model: nn.Module,
                  instantiated_on: InstantiatedOn, concrete_args: dict[str, object],
                  deadline: Budget, tried: list[Specs]
                  ) -> tuple[Specs, Made] | Literal[False] | None:
    """The first of ``candidates`` (specs by ``forward`` argument, and how they were made)
    the model runs on eagerly; False where it runs on none, None once ``deadline`` has passed
    (the rest are not tried). ``tried`` holds the specs run so far, by this call and earlier
    ones of the same search, and gains those run now."""
    for specs, made in candidates:
        if specs in tried:
            continue
        tried.append(specs)
        ran = eager_error_before(deadline, model, instantiated_on, specs, concrete_args)
        if ran is None:
            return None
        if not isinstance(ran, Exception):
            return specs, made
    return False
