"""The base of fx-lsp's dispatch modes for code run eagerly on tensors without data (its own
eager runs, and the code ``torch.compile`` runs between graphs): ``refused_kernels`` and
``devices.data_sized_outputs``."""

from __future__ import annotations

from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class EagerCodeMode(TorchDispatchMode):
    """A mode that sees operators of eager code only: dynamo ignores it while it compiles
    (``ignore_compile_internals``), and higher-order operators pass through it. Subclasses
    answer the rest in ``handle``."""

    #: Higher-order operators (``torch.cond``, ``torch.utils.checkpoint``'s) pass through
    #: (below): without this a mode with no rule of theirs makes them raise
    #: NotImplementedError, an FX502 of fx-lsp's making. An attribute older torch ignores.
    supports_higher_order_operators = True

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        return True

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        kwargs = kwargs or {}
        if isinstance(func, torch._ops.HigherOrderOperator):
            return func(*args, **kwargs)  # this mode is off while it runs: torch's own way
        return self.handle(func, args, kwargs)

    def handle(self, func: Any, args: Any, kwargs: dict[str, Any]) -> Any:
        """The operator's result (the mode is off while this runs)."""
        return func(*args, **kwargs)
