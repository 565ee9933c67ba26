"""What goes into the engine: a ``TraceJob`` (one file of a workspace, with its unsaved
buffers), the configuration it carries (``EngineConfig``, ``ModuleConfig`` per class), the
report's selection of codes (``ReportConfig``), and the literal constructor calls
(``CallSite``) and builder functions (``Builder``) found for its classes. Plain dataclasses,
as read from ``[tool.fx-lsp]`` (``fxcore.workspace.config``) and built by
``fxcore.workspace.paths.trace_jobs``.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from typing import Any

from fxcore.model.container_spec import InputSpec
from fxcore.rules import CODE_PREFIXES


@dataclass(frozen=True)
class CallSite:
    """``Class(*args, **kwargs)`` as written at ``site`` (``README.md:42``): each argument
    as its source text, a literal or a nested literal call."""

    site: str
    args: tuple[str, ...] = ()
    kwargs: tuple[tuple[str, str], ...] = ()
    #: ``from_name`` for ``Class.from_name(...)``: a method of the class called instead of
    #: the class itself (an alternate constructor, taken only if it is a classmethod that
    #: returns an instance of the class).
    method: str | None = None
    #: Some arguments were not literals (``ConvBlock(dims, c, c, norm_name="instance")`` in a
    #: factory): only the literal keywords are kept, as values for those parameters
    #: (``TraceJob.keyword_values``), never as a call to build with.
    partial: bool = False


#: Other literal calls of a class a job carries (``TraceJob.other_call_sites``): each costs
#: a build and the tracing of the submodule classes only it holds.
MAX_OTHER_CALL_SITES = 16


@dataclass(frozen=True)
class Builder:
    """A module-level function of a class's own module that builds an instance of it and
    needs no arguments (``def resnet50(**kwargs): return get_resnet(blocks=50, **kwargs)``),
    found with ``ast`` by ``fxcore.workspace.builders``."""

    function: str
    #: The line of its ``def``.
    line: int
    #: It has a ``pretrained`` parameter: it is called with ``pretrained=False``.
    passes_pretrained: bool = False


@dataclass(frozen=True)
class DynamicDim:
    """One dimension of a ``forward`` argument that torch.export keeps symbolic: a
    ``torch.export.Dim(name, min=..., max=...)``; dimensions sharing a name are equal."""

    name: str
    min: int | None = None
    max: int | None = None


@dataclass
class ModuleConfig:
    """Per-class configuration: ``[tool.fx-lsp.modules."pkg.net:Net"]``."""

    factory: str | None = None
    args: list[Any] = field(default_factory=list)
    kwargs: dict[str, Any] = field(default_factory=dict)
    concrete_args: dict[str, Any] = field(default_factory=dict)
    #: ``call = "ViT(image_size=256, depth=(1, 2, 3))"``: a pasted constructor call with
    #: literal arguments (tuples and ``None``, which TOML lacks), parsed by
    #: ``fxcore.workspace.config``.
    call: CallSite | None = None
    #: ``inputs = {x = "float32[2, 3, 224, 224]"}``: example inputs for shape propagation; a
    #: container of tensors spelled as Python does (``"{'p3': float32[2, 8, 32, 32]}"``).
    inputs: dict[str, InputSpec] = field(default_factory=dict)
    #: ``dynamic = {x = {0 = "batch"}}`` (or ``{0 = {name = "batch", min = 2, max = 64}}``):
    #: argument -> dimension index -> the dimension torch.export keeps dynamic; None when not
    #: given (the export mode then tries each input's batch, FX407), ``{}`` for static shapes.
    dynamic: dict[str, dict[int, DynamicDim]] | None = None
    #: ``device = "cuda"``: the device this class is judged for, over ``per-file-device`` and
    #: ``[tool.fx-lsp] device`` (one of ``DEVICES``); None when not given.
    device: str | None = None


#: The values of ``[tool.fx-lsp] device``.
DEVICES = ("auto", "cpu", "cuda")


@dataclass
class EngineConfig:
    """The ``[tool.fx-lsp]`` table of a workspace's ``pyproject.toml``, typed."""

    leaf_modules: list[str] = field(default_factory=list)
    autowrap_functions: list[str] = field(default_factory=list)
    autowrap_modules: list[str] = field(default_factory=list)
    tracer: str | None = None
    modules: dict[str, ModuleConfig] = field(default_factory=dict)
    timeout: float = 20.0
    #: Seconds all of a file's classes may take, from its first import's end: the classes
    #: not reached by then are not traced (``fxcore.host.unfinished_children``).
    file_timeout: float = 300.0
    memory_limit_mb: int = 8192
    exclude: list[str] = field(default_factory=list)
    #: Synthesize constructor arguments for classes nobody configured
    #: (``fxcore.worker.building.arguments``).
    guess_arguments: bool = True
    #: The capture modes each class is captured with, in order (``fxcore.model.capture_modes``):
    #: one verdict per mode.
    modes: tuple[str, ...] = ("fx",)
    #: The export mode also exports each class with ``strict=True`` (dynamo), reporting what
    #: fails only there (FX405): off by default, as it costs a second export per class.
    export_strict: bool = False
    #: The ONNX opset the onnx mode checks ``torch.onnx.export(..., opset_version=)`` at;
    #: None for the exporter's default (``fxcore.worker.capture.onnx``).
    onnx_opset: int | None = None
    #: The device each class is judged for: ``cpu``, ``cuda``, or ``auto`` (the code's own:
    #: ``fxcore.worker.devices.device_choice``). Never the machine's.
    device: str = "auto"
    #: ``per-file-device = {"kernels/*.py" = "cuda"}``: glob, relative to the workspace root
    #: (or a file name) -> the device the classes of matching files are judged for, over
    #: ``device``; the first pattern that matches decides.
    per_file_device: dict[str, str] = field(default_factory=dict)
    #: The ``nn.Module`` mode (``model.train()`` / ``model.eval()``) export and compile judge a
    #: class in (``fxcore.worker.module_modes.judging``): "auto" exports in eval mode and
    #: compiles in both where they can differ; "train" or "eval" judges both modes in that one.
    #: torch.fx traces every class as built (train mode) whatever this says.
    module_mode: str = "auto"
    #: Environment variables passed to workspace code besides the allowlisted ones
    #: (``fxcore.host.worker_environment``): names, or prefixes ending in ``*``.
    pass_env: list[str] = field(default_factory=list)


@dataclass
class ReportConfig:
    """Which codes are reported (``select``, ``ignore``, ``per-file-ignores`` as ruff spells
    them): code prefixes such as ``FX0`` or ``FX002``; the longest matching prefix decides."""

    select: list[str] = field(default_factory=lambda: list(CODE_PREFIXES))
    ignore: list[str] = field(default_factory=list)
    #: Glob, relative to the workspace root (or a file name) -> prefixes ignored there.
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)


class AbsolutePaths(frozenset[str]):
    """A set of absolute paths, made once for a whole run and shared by its jobs: making a
    job's paths absolute keeps it as it is, where a copy per job would cost the square of the
    run's files in time and memory."""

    @classmethod
    def of(cls, paths: frozenset[str]) -> AbsolutePaths:
        return paths if isinstance(paths, AbsolutePaths) \
            else cls(os.path.abspath(path) for path in paths)


@dataclass
class TraceJob:
    """One file to import and trace, with the workspace it belongs to."""

    path: str
    workspace_root: str
    config: EngineConfig = field(default_factory=EngineConfig)
    #: Unsaved editor buffers: absolute path -> text. They replace the files on disk in imports.
    overlays: dict[str, str] = field(default_factory=dict)
    #: Only trace these classes (all when empty).
    only_classes: list[str] = field(default_factory=list)
    #: Class name -> a literal constructor call found in the workspace
    #: (``fxcore.workspace.call_sites``);
    #: filled by ``fxcore.checking.preparation`` for the classes of this file.
    call_sites: dict[str, CallSite] = field(default_factory=dict)
    #: Class name -> its next literal calls (at most ``MAX_OTHER_CALL_SITES``): the worker
    #: builds each on the meta device only for the workspace classes it holds (their
    #: parent-built instances), never for the class's own verdict.
    other_call_sites: dict[str, tuple[CallSite, ...]] = field(default_factory=dict)
    #: Class name -> parameter -> the literal values (as source) calls in the workspace's
    #: Python files give it where the call's other arguments are not literals (``partial``
    #: call sites): values to build with where arguments are guessed.
    keyword_values: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)
    #: The variables ``config.pass_env`` names, with their values in the caller's environment
    #: (``fxcore.host.worker_environment``): set in the child before it imports the file.
    environment: dict[str, str] = field(default_factory=dict)
    #: Class name -> its builder functions in this file, in file order
    #: (``fxcore.workspace.builders``); filled by ``fxcore.checking.preparation``.
    builders: dict[str, tuple[Builder, ...]] = field(default_factory=dict)
    #: The absolute paths of the files whose classes may get a verdict traced as a root of this
    #: file built them (``fxcore.worker.pipeline.submodule_instances``): those of a run that
    #: keeps nothing for later (``fx-lsp check --no-cache``), whose report shows no other file.
    #: None: any workspace file (the server and cached runs keep them for files checked later).
    #: One ``AbsolutePaths`` shared by a run's jobs.
    derived_paths: frozenset[str] | None = None
    #: Classes of this file whose verdicts the host keeps from an earlier trace of the same
    #: code (``fxcore.host.class_cache``): the child imports the file but neither announces
    #: nor traces them.
    reused_classes: list[str] = field(default_factory=list)
    #: compile mode's loop of calls (``fxcore.worker.capture.compile.recompile_loop``) runs:
    #: an editor's trace turns it off in the stage of single calls, whose verdicts it
    #: publishes before the loop's findings (``fxcore.reporting.mode_phases``).
    loop_of_calls: bool = True

    def with_absolute_paths(self) -> TraceJob:
        """The job with absolute paths: a child runs in another working folder, and the
        call-site index and the cache key a job by its absolute root and path."""
        return dataclasses.replace(
            self, path=os.path.abspath(self.path),
            workspace_root=os.path.abspath(self.workspace_root),
            overlays={os.path.abspath(path): text for path, text in self.overlays.items()},
            derived_paths=None if self.derived_paths is None
            else AbsolutePaths.of(self.derived_paths))
