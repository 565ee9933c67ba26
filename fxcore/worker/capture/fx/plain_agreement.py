"""The safety net under the recovering tracer: a class it failed is traced once more as plain
torch.fx traces it, and where that trace succeeds the verdict is plain torch.fx's.

The recovering tracer gives ``Proxy`` dunders that a plain Proxy lacks or raises from
(``tracer.proxy_patches``), and answers only where Python itself asks
(``asking_code``): where torch's C code asks, a plain Proxy's error is part of how torch goes
on (tensor indexing clears it and dispatches to ``__torch_function__``), and an answer there
turned a class plain torch.fx traces into a failed one (a rotary embedding's
``self.cache[input_pos]``). torch's C code asks Proxies in more places than fx-lsp
can list, and fx-lsp promises plain torch.fx's verdict, so a class that failed is traced
again with no patches and with ``to_bool``/``iter`` raising as the configured tracer's do
(``RecoveringTracer.recovers``). A trace that then succeeds is plain torch.fx's own: its graph
is the verdict's, and the recorded failures, which plain torch.fx never meets, are dropped.
The tracer is still a ``RecoveringTracer``, for its bookkeeping (node origins, module and
parameter order), which records and changes nothing. The second trace costs time only for
classes that failed, and most of those fail again at their first failure, early.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

import torch
from torch import fx

from fxcore.worker.building.as_built import snapshot
from fxcore.worker.capture.fx.tracer import RecoveringTracer
from fxcore.worker.meta.values_read import StandIns
from fxcore.worker.running.seeding import drawn_states, seed_generators

#: The graphs that are plain torch.fx's (a class the recovering trace failed): a retrace of
#: the class for the mis-trace hints is made the same way, so that it compares like with like.
_PLAIN_GRAPHS: weakref.WeakSet[fx.Graph] = weakref.WeakSet()


@dataclass
class PlainTrace:
    """A trace of the instance that plain torch.fx makes without error."""

    tracer: RecoveringTracer
    graph: fx.Graph
    #: The stand-ins of the meta values the workspace read in it (``values_read``).
    stand_ins: StandIns
    #: Whether it drew from Python's or NumPy's global generator (FX206).
    drew_randomly: bool


def plain_trace(tracer: RecoveringTracer, module: torch.nn.Module,
                concrete_args: dict[str, Any] | None, put_back: Callable[[], None],
                surroundings: AbstractContextManager[StandIns]) -> PlainTrace | None:
    """``module`` traced by ``tracer`` as plain torch.fx traces it, in ``surroundings`` (the
    capture's, less the Proxy patches); None where plain torch.fx fails too.

    ``put_back`` first puts the instance back as the capture met it
    (``building.as_built.snapshot``): the recovering trace ran down branches plain torch.fx
    never takes, and what they left on it (a flag, a cache) must not decide this trace.
    Where this trace fails, the instance is left as the recovering trace left it: that
    trace's graph stays the capture's, and its constants (``_tensor_constant0``) are the
    instance's attributes.
    """
    tracer.recovers = False
    recovered = snapshot(module)
    put_back()
    seed_generators()  # from the state the capture traced from: the same draws
    states = drawn_states()
    with surroundings as stand_ins:
        try:
            graph = tracer.trace(module, concrete_args=concrete_args)
        except BaseException:  # anything the first trace would have ended on
            recovered()
            return None
    _PLAIN_GRAPHS.add(graph)
    return PlainTrace(tracer, graph, stand_ins, drawn_states() != states)


def is_plain(graph: fx.Graph) -> bool:
    """True for a graph ``plain_trace`` made."""
    return graph in _PLAIN_GRAPHS

