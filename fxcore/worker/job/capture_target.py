"""What a capture takes and gives: a ``CaptureTarget`` (a built instance) in, a
``CaptureRecord`` out, with the raw pieces a capture records on the way (``RecordedFailure``,
``NodeOrigin``). Everything after the capture (the graph's facts, shapes, the module result)
reads only the record, never a mode's own objects (a tracer, an exported program).
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import fx

from fxcore.model.results import (
    Arguments,
    Failure,
    Hint,
    InstantiatedOn,
    OnnxNode,
)
from fxcore.worker.job.inputs_decision import InputsDecision
from fxcore.worker.source.locate import RawPosition
from fxcore.workspace.discovery import ClassSource


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
    #: The instance to capture: the user's module (``fxcore.model`` is fx-lsp's data types).
    module: torch.nn.Module
    instantiated_on: InstantiatedOn
    #: Arguments of ``forward`` fixed to constants (``concrete-args``).
    concrete_args: dict[str, Any] = field(default_factory=dict)
    #: The constructor call that built the instance (a parent's for a submodule): a shape
    #: problem on a guessed instance says so.
    arguments: Arguments | None = None
    #: For a submodule traced as its parent built it, on inputs inferred for it alone: why
    #: the inputs the parent passes it were not recorded (``fxcore.worker.inputs.given.parent``).
    parent_inputs_missing: str | None = None
    #: What the inputs stage decided for this instance (or the parent's inputs it passes),
    #: kept by the pipeline alone (``pipeline.capturing``), which passes it to each capture and
    #: reader: the modes after the first reuse it, also that no inputs were found (a search
    #: that finds none takes its time once). None until decided.
    inputs_decision: InputsDecision | None = None
    #: The export mode's outcome on this instance, by ``model.training`` when it exported:
    #: the onnx mode translates that program rather than exporting again.
    exports: dict[bool, ExportOutcome] = field(default_factory=dict)
    #: Where building the instance, or a capture of it, read a tensor as on meta, in words:
    #: the pipeline then judges it on fake tensors (``devices.meta_branches``). None until
    #: such a read is met.
    meta_read: str | None = None


@dataclass
class ExportOutcome:
    """What the export mode made of an instance: its record, and the exported program (on
    fake tensors) when the export ended with one."""

    record: CaptureRecord
    program: torch.export.ExportedProgram | None


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
    #: How many graphs the capture produced (``torch.compile`` makes one per region between
    #: graph breaks); None for a mode that makes one graph.
    graph_count: int | None = None
    #: The nodes of those graphs, all together (a mode of one graph counts its ``graph``'s).
    node_count: int | None = None
    #: How long the capture itself took, and the part of it that was compile mode's loop of
    #: calls (``fxcore.worker.capture.compile.recompile_loop``), summed over its runs.
    seconds: float = 0.0
    loop_seconds: float = 0.0
    #: Why the mode could not check the class at all (no inputs, an operator that needs real
    #: data): not a verdict. None when it could.
    not_checked: str | None = None
    #: Node name -> shape, when the capture itself knows them (export's fake values); None
    #: when shapes are propagated after the capture (fx).
    shapes: dict[str, str] | None = None
    #: What the verdict should say about how far to trust the capture (a private torch hook
    #: missing, so only the first failure is found).
    notes: list[str] = field(default_factory=list)
    #: Whether the capture drew from Python's or NumPy's global random generator
    #: (``fxcore.worker.running.seeding.drawn_states``): its graph keeps the outcomes drawn (FX206).
    drew_randomly: bool = False
    #: Hints the capture found itself, beside its failures (compile mode's recompilations).
    hints: list[Hint] = field(default_factory=list)
    #: The onnx mode's translated model: its first nodes, and how many it has.
    onnx_graph: list[OnnxNode] = field(default_factory=list)
    onnx_node_count: int | None = None

    @property
    def complete(self) -> bool:
        return not self.failures and self.graph_module is not None
