"""Plain dataclasses that go into and come out of the tracing engine.

Positions are 1-based lines and 1-based columns counted in characters (code points),
end exclusive. Adapters convert them to their own encoding (the language server to UTF-16).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from fxcore.rules import CODE_OF_KIND

ModuleStatus = Literal["traceable", "failed", "not-traced"]
InstantiatedOn = Literal["meta", "cpu", "factory"]
#: "parent": the inputs the parent passes a submodule traced as it built it. "example": an
#: example the code gives (``example_input_array``, ``dummy_inputs``, a call in its tests).
InputsOrigin = Literal["config", "annotation", "inferred", "parent", "example"]
#: Where a class's constructor arguments came from (see ``Arguments``).
ArgumentOrigin = Literal["config", "defaults", "builder", "parent", "call-site", "config-class",
                         "guessed"]

#: Failure or hint kind -> its stable diagnostic code (the registry: ``fxcore.rules``).
CODES: dict[str, str] = CODE_OF_KIND


@dataclass(frozen=True)
class Range:
    """A range in a file that is known from context: 1-based lines and character columns,
    end exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int

    def at(self, path: str) -> dict[str, Any]:
        """The fields of a ``Span`` over this range in ``path``, to construct one with."""
        return {"path": path, "line": self.line, "column": self.column,
                "end_line": self.end_line, "end_column": self.end_column}


@dataclass
class Span:
    """A range in the file ``path``: where a frame, failure, hint or class is."""

    path: str
    line: int
    column: int
    end_line: int
    end_column: int

    @property
    def range(self) -> Range:
        return Range(self.line, self.column, self.end_line, self.end_column)

    def span(self) -> dict[str, Any]:
        """Its own ``Span`` fields, to construct another located object at the same place."""
        return {f.name: getattr(self, f.name) for f in fields(Span)}


@dataclass
class Frame(Span):
    """One call in the chain from the traced module's ``forward`` down to a failure."""

    function: str


@dataclass
class Failure(Span):
    """A reason why a module cannot be traced, located on the user's own expression.

    ``frames`` is the call chain, outermost first. The span is the innermost frame that lies
    inside the checked workspace.
    """

    code: str
    kind: str
    message: str
    frames: list[Frame] = field(default_factory=list)
    #: True when the failure may only follow from how an earlier failure was recovered from.
    possible_consequence: bool = False
    #: The ``nn.Module`` mode ("train" or "eval") it was met in, when its verdict holds for
    #: both and only that one meets it (``ModuleResult.module_modes``).
    module_mode: str | None = None


#: What a recompilation is about: a dimension's size, a number argument, a container's length,
#: a submodule attribute swapped between calls.
RecompileKind = Literal["size", "number", "length", "module"]


@dataclass
class RecompileSubject:
    """What compile mode's loop of calls found recompiling (FX506-FX510), as the worker knew
    it, for the quick fixes to read rather than the message's words."""

    kind: RecompileKind
    #: The ``forward`` argument (a tensor, a number, a container) or, for ``module``, the
    #: attribute of ``self``.
    name: str
    #: The dimension of a ``size`` subject (0: the batch, or the steps a loop runs over).
    dimension: int | None = None


@dataclass
class Hint(Span):
    """Something worth knowing that does not stop tracing (FX200: unused submodule/parameter;
    a none-check torch.fx traces one way; FX505-FX510: a recompilation)."""

    code: str
    kind: str
    message: str
    #: The member a hint names: FX200's unused one, a none-check's argument (for its fix).
    member: str = ""
    #: A recompilation's subject (none for FX505, whose fix torch's own hint names).
    recompile: RecompileSubject | None = None


@dataclass
class GraphNodeInfo:
    """One FX graph node, as shown to users."""

    name: str
    op: str
    target: str
    #: ``float32[2, 64]`` (``(a, b)`` for tuples) when shapes were propagated.
    shape: str | None = None


@dataclass
class GraphNode:
    """One node of a traced graph, for drawing it: what it is, what it reads, and where the
    user's code made it."""

    name: str
    op: str
    target: str
    #: Names of the nodes it takes as inputs, in order.
    inputs: list[str] = field(default_factory=list)
    shape: str | None = None
    #: Qualified names of the submodules whose ``forward`` was running when the node was
    #: created, outermost first (a ``call_module`` node's own submodule excluded).
    scope: list[str] = field(default_factory=list)
    #: The innermost workspace source line that created it, if any.
    path: str | None = None
    line: int | None = None


@dataclass
class OnnxNode:
    """One node of the ONNX model the onnx mode translated (its top-level graph), for showing
    it beside the exported program: the values it reads and writes, by name."""

    op_type: str
    name: str
    #: The operator set's domain ("" for the standard ``ai.onnx`` one).
    domain: str = ""
    #: Value names; "" for an optional input left out.
    inputs: list[str] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)


@dataclass
class Arguments:
    """The constructor call a verdict was traced with, so anyone can rebuild the instance.

    Values are Python ``repr`` strings, evaluated in the class's module namespace. For
    ``origin == "parent"`` the class was not built on its own: ``args``/``kwargs`` are the
    parent's (``parent``, itself built from ``parent_origin``), and the traced instance is
    ``parent_instance.get_submodule(path)``.
    """

    origin: ArgumentOrigin
    args: list[str] = field(default_factory=list)
    kwargs: dict[str, str] = field(default_factory=dict)
    #: ``pkg.mod:Class`` of the traced root that built this instance (origin "parent").
    parent: str | None = None
    #: The instance's path in the parent, such as ``blocks.0.attn`` (origin "parent").
    path: str | None = None
    #: Where the parent's own arguments came from (origin "parent").
    parent_origin: ArgumentOrigin | None = None
    #: ``pkg.models.resnet:resnet50``: the builder function that built the instance (origin
    #: "builder", or "parent" when the parent was built by it), called with ``kwargs``; for
    #: origin "call-site", the classmethod the site called (``pkg.model:Net.from_name``).
    builder: str | None = None
    #: ``README.md:42``: the call site the arguments were read from (origin "call-site",
    #: or "parent" when the parent was built from it), relative to the workspace root.
    site: str | None = None


@dataclass
class ExampleInputs:
    """The inputs shapes were propagated with: ``tensors`` maps each ``forward`` argument to
    a spec such as ``float32[2, 3, 224, 224]``."""

    origin: InputsOrigin
    tensors: dict[str, str] = field(default_factory=dict)
    #: How inferred sizes were chosen: declared by the model, solved from its constraints
    #: (the first size tried that it accepts), or that none tried fits; None for defaults.
    note: str | None = None
    #: Arguments other than tensors that a parent passes (``fmap_dims={'h': 4, 'w': 4}``), each
    #: a Python literal's ``repr``, given with the tensors where a mode runs ``forward``.
    values: dict[str, str] = field(default_factory=dict)
    #: How each argument was found, where the search that found it says (a dict read by
    #: keys ``'ids'``, ``'mask'``, each a tensor): learned from recording stand-ins.
    found_by: dict[str, str] = field(default_factory=dict)


@dataclass
class ModuleResult(Span):
    """The outcome of tracing one ``nn.Module`` class; its span is the class's name."""

    class_name: str
    #: ``import.name:ClassName``: the key used in ``[tool.fx-lsp.modules]``.
    qualified_name: str
    status: ModuleStatus
    #: Range of ``def forward`` in this file when the class defines it itself.
    forward: Range | None = None
    reason: str | None = None
    node_count: int | None = None
    instantiated_on: InstantiatedOn | None = None
    #: The constructor arguments the verdict was traced with, and where they came from.
    arguments: Arguments | None = None
    #: "skipped" when building tried to load pretrained weights and was given none.
    weights: Literal["skipped"] | None = None
    failures: list[Failure] = field(default_factory=list)
    hints: list[Hint] = field(default_factory=list)
    #: ``GraphModule.code``: the forward that torch.fx generates (traceable modules only).
    #: A larger text bound than a message's (``fxcore.protocol.result_codec``): a whole forward.
    generated_code: str | None = field(default=None, metadata={"max_characters": 1 << 20})
    #: Source line ``(path, line)`` -> the graph nodes it produced (workspace files).
    line_nodes: dict[tuple[str, int], list[GraphNodeInfo]] = field(default_factory=dict)
    #: The traced graph (the graph recovered past the failures for a failed class).
    graph: list[GraphNode] = field(default_factory=list)
    #: Submodule qualified name -> its class name, for the submodules of ``graph``'s scopes.
    scope_types: dict[str, str] = field(default_factory=dict)
    #: Qualified names of submodules in the order their forward ran during the trace.
    module_order: list[str] = field(default_factory=list)
    #: Qualified names of parameters in the order they were first used during the trace.
    parameter_order: list[str] = field(default_factory=list)
    #: How long the capture took (compile mode's loop of calls included: what the user waits
    #: for), and the part of it that was the loop of calls (0 in the other modes).
    trace_seconds: float = 0.0
    loop_seconds: float = 0.0
    #: The example inputs of shape propagation, the shape ``forward`` returned, and why there
    #: are no shapes when there are none.
    inputs: ExampleInputs | None = None
    output_shape: str | None = None
    shapes_note: str | None = None
    #: Choosing example inputs and propagating shapes took this long (besides the trace).
    shape_seconds: float = 0.0
    #: Where shapes stopped fitting together during propagation (FX300): the class traces,
    #: but running it on such inputs would fail.
    shape_errors: list[Failure] = field(default_factory=list)
    #: What the capture mode says about how far its result goes (export: only the first
    #: failure, because a private torch hook it needs is missing in this torch).
    capture_notes: list[str] = field(default_factory=list)
    #: The capture mode that made this verdict (``fxcore.model.capture_modes``): a class has one
    #: verdict per configured mode.
    mode: str = "fx"
    #: How many graphs a mode that goes on past a graph break made (compile); None for one
    #: graph or none. Judged in two ``nn.Module`` modes, the larger count.
    graph_count: int | None = None
    #: The ``nn.Module`` modes ("train", "eval") the verdict holds for
    #: (``fxcore.worker.module_modes.judging``): export's and compile's; empty for torch.fx, which
    #: traces the class as built.
    module_modes: list[str] = field(default_factory=list)
    #: Compiled in both ``nn.Module`` modes: each one's graph count.
    graph_counts: dict[str, int] = field(default_factory=dict)
    #: The onnx mode's translated ONNX model: its first nodes
    #: (``fxcore.worker.capture.onnx.translation.NODE_LIMIT``), and how
    #: many it has (None where no model was translated, and in the other modes).
    onnx_graph: list[OnnxNode] = field(default_factory=list)
    onnx_node_count: int | None = None


@dataclass
class FailedAssignment:
    """A module-level assignment of a notebook's module that raised while the module was
    imported (``x = CsvDataset("data/train.csv")`` with no such file): it is skipped, as a
    cell that fails defines nothing, and the notebook's other definitions still load."""

    #: Its first line in the notebook's module.
    line: int
    #: The names it would have bound.
    names: list[str]
    #: ``Type: message`` of what it raised.
    error: str


@dataclass
class FileResult:
    """Everything the engine found in one file."""

    path: str
    modules: list[ModuleResult] = field(default_factory=list)
    #: Verdicts of workspace classes (of this or other files) traced as the submodule
    #: instances this file's roots built (``arguments.origin == "parent"``). Kept apart from
    #: ``modules``: they are candidates that ``fxcore.reporting.parent_arguments`` gives a class
    #: whose
    #: own result has no configured or default arguments.
    derived_modules: list[ModuleResult] = field(default_factory=list)
    #: File-level problems: syntax error, import error (FX100), worker crash before any class.
    errors: list[Failure] = field(default_factory=list)
    #: Absolute paths of the workspace files that importing this file loaded (itself included).
    imported_files: list[str] = field(default_factory=list)
    #: Top-level installed packages (site-packages, never the workspace) that the import
    #: loaded and the worker did not have yet: the engine preloads them for later jobs.
    third_party_packages: list[str] = field(default_factory=list)
    #: SHA-256 of the bytes the worker's import compiled, per workspace file it compiled
    #: (buffers included, and files whose module then failed): what a cached result
    #: depends on.
    imported_hashes: dict[str, str] = field(default_factory=dict)
    #: Modules the import looked for in workspace folders and did not find there: name ->
    #: those folders. A file created there would change the result.
    missing_modules: dict[str, list[str]] = field(default_factory=dict)
    #: A notebook's assignments that raised on import, and were skipped.
    failed_assignments: list[FailedAssignment] = field(default_factory=list)
    #: What the user code printed while being imported and traced (tail only).
    output: str = ""
    seconds: float = 0.0
    #: The part of ``seconds`` that was compile mode's loop of calls, in every capture the job
    #: made: its classes' and the submodule instances' its roots built (``derived_modules``).
    #: Summed by the engine from the verdicts it received; a worker sends 0.
    loop_seconds: float = 0.0
    from_cache: bool = False


def first_verdicts(modules: Iterable[ModuleResult]) -> list[ModuleResult]:
    """Each class's first verdict, in order: the graph, inlay hints and generated code show
    it (the engine sends ``fx``'s first when it is configured)."""
    first: dict[tuple[str, str], ModuleResult] = {}
    for module in modules:
        first.setdefault((module.path, module.class_name), module)
    return list(first.values())
