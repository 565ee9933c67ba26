"""What every capture mode takes and gives: a built instance in, a ``CaptureRecord`` out.

A capture mode (``fx`` today) turns an ``nn.Module`` instance into a graph, or into located
failures saying where and why it cannot. Everything after the capture (the graph's facts,
shapes, the module result) reads only the record, never the mode's own objects (a tracer, an
exported program), so a new mode is a new module in this package that fills one in.
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import torch
from torch import fx

from fxcore.discovery import ClassSource
from fxcore.results import Failure, Hint, InstantiatedOn
from fxcore.worker.locate import RawPosition

if TYPE_CHECKING:
    from fxcore.worker.context import JobContext


@dataclass
class RecordedFailure:
    """A failure as seen during a capture: kind, message and raw stack (outermost first),
    before it is located (``JobContext.located_failures``)."""

    kind: str
    message: str
    stack: list[RawPosition]


@dataclass
class NodeOrigin:
    """The user frames (file, line) that were on the stack when a node was created."""

    node: fx.Node
    lines: list[tuple[str, int]] = field(default_factory=list)
    #: (code, last instruction, line) of each of those frames, innermost first: where
    #: exactly, computed only for a node a failure is reported on.
    instructions: list[tuple[types.CodeType, int, int]] = field(default_factory=list)


@dataclass
class CaptureTarget:
    """A built instance of a workspace class, ready to capture."""

    cls: type
    source: ClassSource
    model: torch.nn.Module
    instantiated_on: InstantiatedOn
    #: Arguments of ``forward`` fixed to constants (``concrete-args``).
    concrete_args: dict[str, Any] = field(default_factory=dict)


@dataclass
class CaptureRecord:
    """What one capture produced."""

    mode: str
    #: Located failures, in the order they were met.
    failures: list[Failure] = field(default_factory=list)
    #: The graph captured, or the one recovered past the failures (None when there is none).
    graph: fx.Graph | None = None
    #: The module the graph's ``get_attr``/``call_module`` nodes refer to.
    root: torch.nn.Module | None = None
    #: The complete capture, as a runnable module: set only when there are no failures.
    graph_module: fx.GraphModule | None = None
    #: The user source lines that were on the stack when each node was made.
    node_origins: list[NodeOrigin] = field(default_factory=list)
    #: Qualified names of submodules in the order their forward ran, and of parameters in
    #: the order they were first used.
    module_order: list[str] = field(default_factory=list)
    parameter_order: list[str] = field(default_factory=list)
    #: How long the capture itself took.
    seconds: float = 0.0

    @property
    def complete(self) -> bool:
        return not self.failures and self.graph_module is not None


class Capture(Protocol):
    """One way of capturing a model: ``mode`` names it in results and configuration."""

    mode: ClassVar[str]

    def capture(self, context: JobContext, target: CaptureTarget) -> CaptureRecord:
        """Capture ``target``; failures are located with ``context``. Exceptions of user code
        become failures; an exception that escapes is a fault of the mode itself."""
        ...

    def hints(self, context: JobContext, target: CaptureTarget,
              record: CaptureRecord) -> list[Hint]:
        """Checks of a complete capture that only this mode can make (for FX: where the graph
        does not mean what the code says), after the graph's own facts."""
        ...
