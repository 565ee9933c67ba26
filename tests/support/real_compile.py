"""Real ``torch.compile`` as compile mode's loop of calls drives it, for tests that compare the
loop's answer with real torch on real tensors
(``tests/fxcore/worker/capture/test_recompiles*.py``)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from fxcore.worker.capture.compile import recompile_loop


def eager_compiled(model: torch.nn.Module) -> tuple[Callable[..., object],
                                                    recompile_loop.Observer]:
    """``model`` compiled with the eager backend under the loop's observer (which counts the
    frames compiled and reads each recompilation's reason), after a reset of dynamo."""
    observer = recompile_loop.Observer()

    def eager(graph_module: torch.fx.GraphModule, _inputs: object) -> object:
        observer.compiled()
        return graph_module.forward

    torch._dynamo.reset()
    return recompile_loop.optimize(model, eager, False, observer), observer
