"""What a worker child does with one ``TraceJob``: import the file, build each ``nn.Module``
class without weights, trace it with the recovering tracer, and send back results.

This module runs user code; it is only ever called inside a forked child (see
``fxcore.engine``). Results are sent one class at a time so that a class that hangs or
crashes the child costs only its own result.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import dataclasses
import importlib
import importlib.abc
import importlib.machinery
import keyword
import math
import os
import sys
import time
import traceback
from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch
from torch import fx

from fxcore import mistraces
from fxcore.analysis import (
    graph_nodes,
    line_nodes,
    mark_consequences,
    relocate_into_decorator,
    unused_members,
)
from fxcore.arguments import (
    call_site_values,
    candidate_calls,
    missing_from_type_error,
    value_source,
)
from fxcore.config import module_config_for
from fxcore.construction import build, configured_call_note, missing_parameters, resolve
from fxcore.discovery import ClassSource, top_level_classes
from fxcore.example_inputs import from_annotations, inferred
from fxcore.file_access import UnreadableFile, read_bytes
from fxcore.import_overlay import (
    ImportRecord,
    imported_third_party_packages,
    imported_workspace_files,
    install_import_paths,
)
from fxcore.locate import (
    RawPosition,
    SourceIndex,
    innermost_workspace_frame,
    instruction_position,
    to_frame,
    traceback_positions,
)
from fxcore.parsing import SourceTooComplex
from fxcore.results import (
    CODES,
    Arguments,
    ExampleInputs,
    Failure,
    FileResult,
    Frame,
    Hint,
    InstantiatedOn,
    ModuleConfig,
    ModuleResult,
    Range,
    TraceJob,
)
from fxcore.shapes import ShapeError, propagate
from fxcore.suppressions import SKIP_REASON, skipped_lines
from fxcore.tensor_spec import TensorSpec
from fxcore.tracer import RecordedFailure, RecoveringTracer, proxy_patches, recovering_tracer_class
from fxcore.workspace import import_location, is_workspace_file, source_text

#: A message from the child: ("classes", [names]) | ("start", name) | ("module", ModuleResult)
#: | ("deriving", ModuleResult without a verdict yet) | ("derived", ModuleResult)
#: | ("file", FileResult without modules).
Send = Callable[[tuple[str, Any]], None]

#: At most this many distinct workspace classes are traced from one root's submodules, so a
#: huge model does not spend the whole scan on its parts (each still has the class time-out).
MAX_SUBMODULE_CLASSES_PER_ROOT = 24


class JobRunner:
    """Imports and traces the classes of one file, inside a worker child."""

    def __init__(self, job: TraceJob, send: Send) -> None:
        self.job = job
        self.send = send
        self.path = os.path.abspath(job.path)
        self.root = os.path.abspath(job.workspace_root)
        self.overlays = {os.path.abspath(p): text for p, text in job.overlays.items()}
        self.sources = SourceIndex(self.overlays)
        self.location = import_location(self.path)
        # Modules loaded before the job (torch and the like) are never workspace files.
        self.preloaded_modules = set(sys.modules)
        #: The instance the current class was built as, once built (see trace_model).
        self.built_model: torch.nn.Module | None = None
        self.class_sources_by_file: dict[str, dict[str, ClassSource]] = {}
        self.skipped_lines_by_file: dict[str, set[int]] = {}
        #: This file's text as read before importing it.
        self.text: str | None = None
        #: What the imports compiled and missed, once the import paths are installed.
        self.imports = ImportRecord()

    # -- locating --------------------------------------------------------------------------

    def is_workspace_path(self, filename: str) -> bool:
        return is_workspace_file(filename, self.root)

    def failure(
        self,
        kind: str,
        message: str,
        stack: list[RawPosition],
        fallback: Range,
        possible_consequence: bool = False,
    ) -> Failure:
        """A failure located on its innermost workspace frame, with the call chain."""
        frames = [to_frame(position, self.sources) for position in stack]
        here = innermost_workspace_frame(frames, self.root)
        layer = self.third_party_layer(frames)
        if layer is not None:
            message += (
                f" This happens inside the third-party layer `{layer}`, whose forward FX "
                "cannot trace through; mark it as a leaf module so the graph calls it as one "
                f'node: leaf-modules = ["{layer}"] under [tool.fx-lsp] (a quick fix does it).'
            )
        if here is None:
            here = Frame(**fallback.at(self.path), function="")
        return Failure(
            **here.span(),
            code=CODES[kind],
            kind=kind,
            message=message,
            frames=frames,
            possible_consequence=possible_consequence,
        )

    def third_party_layer(self, frames: list[Frame]) -> str | None:
        """``package.module:Class`` of the innermost library ``nn.Module`` whose ``forward``
        the failure happened in (an einops ``Rearrange``), found from the call chain."""
        for frame in reversed(frames):
            if frame.function != "forward" or self.is_workspace_path(frame.path):
                continue
            tree = self.sources.tree(frame.path)
            if tree is None:
                return None
            for node in tree.body:
                if isinstance(node, ast.ClassDef) and \
                        node.lineno <= frame.line <= (node.end_lineno or node.lineno):
                    return f"{import_location(frame.path).module_name}:{node.name}"
            return None
        return None

    def exception_failure(self, kind: str, prefix: str, error: BaseException,
                          fallback: Range) -> Failure:
        detail = describe_exception(error)
        return self.failure(kind, f"{prefix}{detail}", traceback_positions(error.__traceback__),
                            fallback)

    # -- the job ---------------------------------------------------------------------------

    def run(self) -> None:
        file_result = FileResult(path=self.path)
        text = source_text(self.path, self.overlays)
        self.text = text
        if text is None:
            file_result.errors.append(self.file_failure(self.unreadable_reason()))
            self.send(("file", file_result))
            return
        try:
            class_sources = top_level_classes(text)
        except SyntaxError as error:
            file_result.errors.append(self.syntax_failure(error))
            self.send(("file", file_result))
            return

        unimportable = self.unimportable_reason()
        if unimportable is not None:
            file_result.errors.append(self.file_failure(unimportable))
            self.send(("file", file_result))
            return
        # Importable as users import it, with buffers in place of files.
        entries = (self.root, os.path.join(self.root, "src"), self.location.sys_path_entry)
        self.imports = install_import_paths(entries, self.overlays, self.is_workspace_path)
        try:
            module = importlib.import_module(self.location.module_name)
        except BaseException as error:  # user code may raise anything, SystemExit included
            file_result.errors.append(
                self.exception_failure("import", "Importing this file failed: ", error,
                                       Range(1, 1, 1, 1))
            )
            self.record_imports(file_result)
            file_result.third_party_packages = imported_third_party_packages(
                self.preloaded_modules, self.is_workspace_path)
            self.send(("file", file_result))
            return
        imported_file = getattr(module, "__file__", None)
        if not (isinstance(imported_file, str) and os.path.abspath(imported_file) == self.path):
            name = self.location.module_name
            file_result.errors.append(self.file_failure(
                f"This file cannot be imported under its own name: `import {name}` loads "
                f"{imported_file or 'a module without a file'} instead (a package or module of "
                f"the same name comes first on the import path). Rename the file to trace it."
            ))
            self.record_imports(file_result)
            self.send(("file", file_result))
            return

        classes = self.module_classes(module, class_sources)
        self.send(("classes", [cls.__name__ for cls in classes]))
        derived_classes: set[type] = set()
        for cls in classes:
            self.send(("start", cls.__name__))
            self.built_model = None
            if self.is_skipped(self.path, class_sources[cls.__name__]):
                derived_classes.add(cls)
                self.send(("module", self.module_result(cls, class_sources[cls.__name__],
                                                        status="not-traced",
                                                        reason=SKIP_REASON)))
                continue
            root_result = self.trace_class(cls, class_sources[cls.__name__])
            self.send(("module", root_result))
            if self.built_model is not None:
                # Verdicts of submodule instances are extras: the file's own classes, still
                # to come, must not be lost to a module tree that breaks named_modules().
                with contextlib.suppress(Exception):
                    self.trace_built_submodules(root_result, self.built_model, derived_classes)
        self.record_imports(file_result)
        file_result.third_party_packages = imported_third_party_packages(
            self.preloaded_modules, self.is_workspace_path)
        self.send(("file", file_result))

    def file_failure(self, message: str) -> Failure:
        return Failure(code=CODES["import"], kind="import", message=message,
                       **Range(1, 1, 1, 2).at(self.path))

    def unreadable_reason(self) -> str:
        if os.path.islink(self.path) and not os.path.exists(self.path):
            return (f"This file is a symbolic link to {os.readlink(self.path)}, which does "
                    "not exist.")
        try:
            read_bytes(self.path)
        except UnreadableFile as error:
            return f"This file is {error}."
        except OSError as error:
            return f"This file cannot be read: {error.strerror or error}."
        return "This file cannot be read as UTF-8 text."

    def unimportable_reason(self) -> str | None:
        """Why the file cannot be imported under its own module name, if it cannot."""
        name = self.location.module_name
        filename = os.path.basename(self.path)
        stem = os.path.splitext(filename)[0]
        if not all(part.isidentifier() and not keyword.iskeyword(part)
                   for part in [stem, *name.split(".")]):
            return (f"The file name {filename!r} is not an importable module name (module "
                    f"{name!r}): Python module names are identifiers, without dots, dashes "
                    "or keywords. Rename the file to trace it.")
        if name == "__main__" or name.endswith(".__main__"):
            return ("A __main__.py file runs as a script, not as an importable module: move "
                    "its nn.Modules into a module to trace them.")
        loaded = sys.modules.get(name)
        if loaded is not None:
            origin = getattr(loaded, "__file__", None) or "built in"
            return (f"This file cannot be imported under its own name: a module named "
                    f"{name!r} ({origin}) is already loaded by Python or torch in the worker, "
                    "so `import` would return that one. Rename the file to trace it.")
        return None

    def syntax_failure(self, error: SyntaxError) -> Failure:
        line = error.lineno or 1
        column = error.offset or 1
        end_line = error.end_lineno or line
        end_column = error.end_offset or column + 1
        if (end_line, end_column) <= (line, column):
            end_line, end_column = line, column + 1
        if isinstance(error, SourceTooComplex):
            message = f"This file cannot be checked: {error.msg}."
        else:
            message = (f"SyntaxError: {error.msg}. Nothing in this file can be traced until it "
                       "parses.")
        return Failure(
            code=CODES["import"],
            kind="import",
            message=message,
            **Range(line, column, end_line, end_column).at(self.path),
        )

    def record_imports(self, file_result: FileResult) -> None:
        """The workspace files loaded, the hashes of the bytes the imports compiled (a file
        edited during or after its import, or by it, does not vouch for this result under
        its new text) and the modules not found in the workspace."""
        # Files whose module then failed count too: their text made the result.
        file_result.imported_files = sorted({*self.imported_workspace_files(),
                                             *self.imports.compiled_files()})
        file_result.imported_hashes = self.imports.stable_hashes()
        file_result.missing_modules = dict(self.imports.missing)

    def imported_workspace_files(self) -> list[str]:
        """This file and the workspace files its import loaded."""
        found = imported_workspace_files(self.preloaded_modules, self.is_workspace_path)
        return sorted({*found, self.path})

    def module_classes(self, module: ModuleType, sources: dict[str, ClassSource]) -> list[type]:
        """``nn.Module`` subclasses defined in this file that have a ``forward``."""
        found = []
        for name, value in vars(module).items():
            if (
                isinstance(value, type)
                and issubclass(value, torch.nn.Module)
                and value.__module__ == module.__name__
                and name in sources
                and value.forward is not torch.nn.Module.forward
                and (not self.job.only_classes or name in self.job.only_classes)
            ):
                found.append(value)
        return sorted(found, key=lambda cls: sources[cls.__name__].name_span.line)

    # -- one class -------------------------------------------------------------------------

    def module_result(self, cls: type, source: ClassSource, **fields: Any) -> ModuleResult:
        return ModuleResult(
            **source.name_span.at(self.path),
            class_name=cls.__name__,
            qualified_name=f"{self.location.module_name}:{cls.__name__}",
            forward=source.forward,
            **fields,
        )

    def trace_class(self, cls: type, source: ClassSource) -> ModuleResult:
        module_config = module_config_for(self.job.config, self.location.module_name,
                                          cls.__name__)
        if module_config.call is not None:
            try:
                args, kwargs = call_site_values(module_config.call,
                                                vars(sys.modules[cls.__module__]))
            except Exception as error:
                failure = self.exception_failure(
                    "constructor", "The configured call could not be evaluated: ", error,
                    source.name_span)
                return self.module_result(cls, source, status="failed", failures=[failure])
            module_config = dataclasses.replace(module_config, args=args, kwargs=kwargs)
        configured = bool(module_config.factory or module_config.args or module_config.kwargs
                          or module_config.call)
        missing = [] if module_config.factory else missing_parameters(cls, module_config.args,
                                                                       module_config.kwargs)
        if not missing:
            arguments = Arguments(
                origin="config" if configured else "defaults",
                args=[value_source(value) for value in module_config.args],
                kwargs={name: value_source(value)
                        for name, value in module_config.kwargs.items()},
            )
            try:
                model, instantiated_on, weights = build(cls, module_config)
            except BaseException as error:
                # A constructor that forwards **kwargs to a base class needing arguments.
                missing = [] if configured else missing_from_type_error(error)
                if not missing:
                    failure = self.exception_failure(
                        "constructor", f"Building {cls.__name__} failed: ", error,
                        source.name_span)
                    if configured:
                        failure.message += configured_call_note(cls.__name__, module_config)
                    return self.module_result(cls, source, status="failed",
                                              failures=[failure], arguments=arguments)
            else:
                return self.trace_built(cls, source, model, instantiated_on, weights,
                                        module_config.concrete_args, arguments)
        return self.trace_with_found_arguments(cls, source, module_config, missing)

    def trace_with_found_arguments(self, cls: type, source: ClassSource,
                                   module_config: ModuleConfig,
                                   missing: list[str]) -> ModuleResult:
        """Build with arguments from configuration classes or the name table (see
        ``fxcore.arguments``), keeping the first set the constructor accepts."""
        rejected: BaseException | None = None
        site = self.job.call_sites.get(cls.__name__)
        if site is not None:
            try:
                args, kwargs = call_site_values(site, vars(sys.modules[cls.__module__]))
                call = dataclasses.replace(module_config, args=[*module_config.args, *args],
                                           kwargs={**module_config.kwargs, **kwargs})
                model, instantiated_on, weights = build(cls, call)
            except Exception as error:
                rejected = error
            else:
                arguments = Arguments(
                    origin="call-site", site=site.site, args=list(site.args),
                    kwargs=dict(site.kwargs))
                return self.trace_built(cls, source, model, instantiated_on, weights,
                                        module_config.concrete_args, arguments)
        if self.job.config.guess_arguments:
            for candidate in candidate_calls(cls, missing):
                call = dataclasses.replace(module_config,
                                           kwargs={**module_config.kwargs, **candidate.kwargs})
                try:
                    model, instantiated_on, weights = build(cls, call)
                except Exception as error:
                    rejected = error
                    continue
                arguments = Arguments(
                    origin="guessed" if candidate.guessed else "config-class",
                    args=[value_source(value) for value in call.args],
                    kwargs={name: value_source(value) for name, value in call.kwargs.items()},
                )
                return self.trace_built(cls, source, model, instantiated_on, weights,
                                        module_config.concrete_args, arguments)
        key = f"{self.location.module_name}:{cls.__name__}"
        names = ", ".join(missing)
        example = ", ".join(f"{name} = ..." for name in missing)
        tried = ("" if rejected is None else
                 f" Guessed arguments were rejected ({describe_exception(rejected)}).")
        return self.module_result(
            cls,
            source,
            status="not-traced",
            reason=(
                f"The constructor needs arguments: {names}.{tried} Give them in "
                f'pyproject.toml: [tool.fx-lsp.modules."{key}"] kwargs = {{{example}}}, '
                f"or name a factory there (factory = \"pkg.module:make_{cls.__name__}\")."
            ),
        )

    def trace_built(self, cls: type, source: ClassSource, model: torch.nn.Module,
                    instantiated_on: InstantiatedOn, weights_skipped: bool,
                    concrete_args: dict[str, Any], arguments: Arguments) -> ModuleResult:
        result = self.trace_model(cls, source, model, instantiated_on, concrete_args)
        result.arguments = arguments
        if weights_skipped:
            result.weights = "skipped"
        return result

    def make_tracer(self) -> RecoveringTracer:
        config = self.job.config
        base: type[fx.Tracer] = resolve(config.tracer) if config.tracer else fx.Tracer
        tracer_class = recovering_tracer_class(base)
        autowrap_modules = (math, *(importlib.import_module(m) for m in config.autowrap_modules))
        autowrap_functions = tuple(resolve(name) for name in config.autowrap_functions)
        try:
            tracer = tracer_class(autowrap_modules=autowrap_modules,
                                  autowrap_functions=autowrap_functions)
        except TypeError:  # a custom tracer with its own constructor signature
            tracer = tracer_class()
        tracer.extra_leaf_modules = frozenset(config.leaf_modules)
        tracer.set_workspace_filter(self.is_workspace_path)
        return tracer

    def trace_model(
        self,
        cls: type,
        source: ClassSource,
        model: torch.nn.Module,
        instantiated_on: InstantiatedOn,
        concrete_args: dict[str, Any],
    ) -> ModuleResult:
        self.built_model = model
        started = time.perf_counter()
        try:
            tracer = self.make_tracer()
        except BaseException as error:
            failure = self.exception_failure("error", "The tracer configuration failed: ",
                                             error, source.name_span)
            return self.module_result(cls, source, status="failed", failures=[failure],
                                      instantiated_on=instantiated_on)
        ending_error: BaseException | None = None
        graph = None
        with proxy_patches():
            try:
                graph = tracer.trace(model, concrete_args=concrete_args or None)
            except BaseException as error:
                ending_error = error
        seconds = time.perf_counter() - started
        failures = self.located_failures(tracer.recorded_failures, source)
        if ending_error is not None:
            prefix = "Tracing stopped: "
            failure = self.exception_failure("error", prefix, ending_error, source.name_span)
            failure.possible_consequence = bool(failures)
            if failure.possible_consequence:
                failure.message = ("(May be a consequence of recovering from the failures "
                                   "above.) " + failure.message)
            if _raised_in_patch_function(ending_error):
                failure.message = (
                    f"torch.fx cannot set up tracing of a forward wrapped by a decorator that "
                    f"takes *args/**kwargs ({describe_exception(ending_error)}, raised by "
                    "torch.fx's "
                    "_patch_function, which rewrites the wrapper's code object). "
                    "Give the wrapper the forward's explicit arguments, or trace the "
                    "undecorated module."
                )
            failures.append(failure)
        for failure in failures:
            relocate_into_decorator(failure, cls, source, self.path)
        if failures or graph is None:
            recovered: dict[str, Any] = {}
            if graph is not None:
                recovered, shapes = self.recovered_shapes(cls, source, tracer, graph)
                recovered["graph"], recovered["scope_types"] = graph_nodes(tracer, graph, shapes)
            return self.module_result(cls, source, status="failed", failures=failures,
                                      instantiated_on=instantiated_on, trace_seconds=seconds,
                                      **recovered)

        graph_module = fx.GraphModule(tracer.root, graph, cls.__name__)
        shape_fields, shapes = self.propagate_shapes(cls, source, tracer, graph_module)
        graph_view_nodes, scope_types = graph_nodes(tracer, graph, shapes)
        return self.module_result(
            cls,
            source,
            status="traceable",
            instantiated_on=instantiated_on,
            node_count=len(graph.nodes),
            generated_code=graph_module.code.strip() + "\n",
            line_nodes=line_nodes(tracer, shapes),
            graph=graph_view_nodes,
            scope_types=scope_types,
            module_order=tracer.module_order,
            parameter_order=tracer.parameter_order,
            hints=[*unused_members(model, tracer, source, self.path),
                   *self.mistraces(cls, source, model, tracer, graph, concrete_args)],
            trace_seconds=seconds,
            **shape_fields,
        )

    def mistraces(self, cls: type, source: ClassSource, model: torch.nn.Module,
                  tracer: RecoveringTracer, graph: fx.Graph,
                  concrete_args: dict[str, Any]) -> list[Hint]:
        """FX201-FX205: where the graph traced without error but does not mean what the code
        says (``fxcore.mistraces``)."""
        hints = mistraces.checkpoints(
            [line for origin in tracer.node_origins for line in origin.lines
             if not line[0].startswith("<")], self.sources)
        first_line = {origin.node: origin.lines[0] for origin in tracer.node_origins}

        def retrace() -> fx.Graph:
            with proxy_patches():
                return self.make_tracer().trace(model, concrete_args=concrete_args or None)

        hints += mistraces.training_difference(model, graph, retrace, first_line.get, source,
                                               self.path, self.sources)
        forward = mistraces.forward_node(self.sources.tree(self.path), cls.__name__)
        if forward is not None:
            lines = [self.sources.line(self.path, n).rstrip("\r\n")
                     for n in range(1, (forward.end_lineno or forward.lineno) + 1)]
            hints += mistraces.none_checks(forward, graph, lines, self.path, concrete_args)
            hints += mistraces.unused_arguments(forward, graph, lines, self.path)
            hints += mistraces.concrete_arguments(forward, concrete_args, source.name_span,
                                                  lines, self.path)
        return hints

    # -- shapes ------------------------------------------------------------------------------

    def recovered_shapes(self, cls: type, source: ClassSource, tracer: RecoveringTracer,
                         graph: fx.Graph) -> tuple[dict[str, Any], dict[str, str]]:
        """Shapes over the graph tracing recovered past its failures, marked as such (the
        fields of a module result, and node name -> shape); a shape error there is likely an
        artefact of the recovery, so it is only a note."""
        try:
            graph_module = fx.GraphModule(tracer.root, graph, cls.__name__)
        except Exception:
            return {}, {}
        fields, shapes = self.propagate_shapes(cls, source, tracer, graph_module)
        errors = fields.pop("shape_errors", [])
        note = ("Shapes are of the graph recovered past the failures: after the first one "
                "they may not be what the code computes.")
        if errors:
            note += f" Propagation stopped: {errors[0].message}"
        fields["shapes_note"] = f"{note} {fields.get('shapes_note') or ''}".strip()
        if not shapes:
            return {"shapes_note": fields["shapes_note"]}, {}
        return {**fields, "line_nodes": line_nodes(tracer, shapes),
                "node_count": len(graph.nodes)}, shapes

    def example_inputs(self, cls: type, graph_module: fx.GraphModule,
                       tracer_root: torch.nn.Module
                       ) -> tuple[ExampleInputs | None, dict[str, TensorSpec], str | None]:
        """Configured inputs, else annotated ones completed by inferred ones."""
        configured = module_config_for(self.job.config, self.location.module_name,
                                       cls.__name__).inputs
        if configured:
            return (ExampleInputs("config", {k: str(v) for k, v in configured.items()}),
                    configured, None)
        annotated = from_annotations(cls.forward)
        found, note = inferred(graph_module, tracer_root)
        if note is not None and not annotated:
            return None, {}, note
        specs = {**found, **annotated}
        origin = "annotation" if annotated else "inferred"
        return ExampleInputs(origin, {k: str(v) for k, v in specs.items()}), specs, None

    def propagate_shapes(self, cls: type, source: ClassSource, tracer: RecoveringTracer,
                         graph_module: fx.GraphModule) -> tuple[dict[str, Any], dict[str, str]]:
        """The fields of a module result about shapes, and node name -> shape."""
        started = time.perf_counter()
        fields, shapes = self._propagate_shapes(cls, source, tracer, graph_module)
        fields["shape_seconds"] = time.perf_counter() - started
        return fields, shapes

    def _propagate_shapes(self, cls: type, source: ClassSource, tracer: RecoveringTracer,
                          graph_module: fx.GraphModule) -> tuple[dict[str, Any], dict[str, str]]:
        try:
            inputs, specs, note = self.example_inputs(cls, graph_module, tracer.root)
            if inputs is None:
                return {"shapes_note": f"No shapes: {note}."}, {}
            shapes, error = propagate(graph_module, specs)
        except Exception as error:  # a model may hold anything: shapes are extras
            return {"shapes_note": f"No shapes: {describe_exception(error)}."}, {}
        output = next(node for node in graph_module.graph.nodes if node.op == "output")
        fields: dict[str, Any] = {"inputs": inputs, "output_shape": shapes.get(output.name)}
        if error is not None and error.is_mismatch:
            fields["shape_errors"] = [self.shape_failure(error, tracer, inputs, source)]
        elif error is not None:
            fields["shapes_note"] = (f"Shapes stop at `{error.node.name}`, which cannot run "
                                     f"on meta tensors: {error.message}")
        return fields, shapes

    def shape_failure(self, error: ShapeError, tracer: RecoveringTracer, inputs: ExampleInputs,
                      source: ClassSource) -> Failure:
        origin = next((o for o in tracer.node_origins if o.node is error.node), None)
        # Frames of code torch.fx generated ("<string>") are no place of the user's.
        stack = [instruction_position(code, lasti, line)
                 for code, lasti, line in reversed(origin.instructions)
                 if not code.co_filename.startswith("<")] if origin else []
        given = ", ".join(f"{name}: {spec}" for name, spec in inputs.tensors.items())
        where = {
            "config": "configured under [tool.fx-lsp.modules]",
            "annotation": "read from forward's annotations",
            "inferred": "inferred from the first layers that use them: if the real inputs "
                        "differ this is a false alarm; give them under [tool.fx-lsp.modules] "
                        "inputs",
        }[inputs.origin]
        return self.failure("shape", f"{error.message}. With inputs {given} ({where}).",
                            stack, source.name_span)

    # -- classes built by a traced root ----------------------------------------------------

    def trace_built_submodules(self, root: ModuleResult, model: torch.nn.Module,
                               done: set[type]) -> None:
        """Trace each workspace class that ``model`` (the built root) holds as a submodule,
        as the very instance the root built, and send its verdict as ("derived", ...).

        Classes in ``done``, configured classes, and classes whose constructor needs no
        arguments are skipped: their own verdict takes precedence over a parent's."""
        parent_arguments = root.arguments or self.root_arguments(root.class_name)
        started = time.monotonic()
        traced = 0
        for path, submodule in model.named_modules():
            cls = type(submodule)
            if not path or cls in done:
                continue
            located = self.workspace_class_source(cls)
            if located is None or self.has_own_arguments(cls, located[0]) \
                    or self.is_skipped(*located):
                done.add(cls)
                continue
            if traced >= MAX_SUBMODULE_CLASSES_PER_ROOT \
                    or time.monotonic() - started > self.job.config.timeout:
                return  # the classes left may still come from the file's next root
            done.add(cls)
            traced += 1
            self.send(("derived", self.trace_submodule(root, parent_arguments, path,
                                                       submodule, *located)))

    def trace_submodule(self, root: ModuleResult, parent_arguments: Arguments, path: str,
                        submodule: torch.nn.Module, file: str,
                        source: ClassSource) -> ModuleResult:
        """One submodule's verdict, located and named in its class's own file."""
        in_file = copy.copy(self)
        in_file.path = file
        in_file.location = import_location(file)
        cls = type(submodule)
        arguments = Arguments(
            origin="parent",
            args=parent_arguments.args,
            kwargs=parent_arguments.kwargs,
            parent=root.qualified_name,
            path=path,
            parent_origin=parent_arguments.origin,
        )
        # The engine turns this into a time-out (or crash) verdict if tracing never returns.
        self.send(("deriving", in_file.module_result(cls, source, status="failed",
                                                     arguments=arguments)))
        concrete_args = module_config_for(self.job.config, in_file.location.module_name,
                                          cls.__name__).concrete_args
        result = in_file.trace_model(cls, source, submodule, root.instantiated_on or "meta",
                                     concrete_args)
        result.arguments = arguments
        return result

    def root_arguments(self, class_name: str) -> Arguments:
        """How a root was built, from its configuration (for results that do not say)."""
        module_config = module_config_for(self.job.config, self.location.module_name,
                                          class_name)
        if module_config.factory or module_config.args or module_config.kwargs:
            return Arguments(origin="config", args=[repr(a) for a in module_config.args],
                             kwargs={k: repr(v) for k, v in module_config.kwargs.items()})
        return Arguments(origin="defaults")

    def has_own_arguments(self, cls: type, file: str) -> bool:
        """True when the class is configured or can be built without arguments."""
        module_config = module_config_for(self.job.config, import_location(file).module_name,
                                          cls.__name__)
        if module_config.factory or module_config.args or module_config.kwargs \
                or module_config.call:
            return True
        return not missing_parameters(cls, [], {})

    def is_skipped(self, file: str, source: ClassSource) -> bool:
        """The class line has ``# fx-lsp: skip``."""
        if file not in self.skipped_lines_by_file:
            text = self.text if file == self.path else source_text(file, self.overlays)
            self.skipped_lines_by_file[file] = skipped_lines(text or "")
        return source.name_span.line in self.skipped_lines_by_file[file]

    def workspace_class_source(self, cls: type) -> tuple[str, ClassSource] | None:
        """The file and source ranges of a top-level ``nn.Module`` class with its own
        ``forward`` defined in a workspace file; None for torch's and libraries' classes."""
        if cls.forward is torch.nn.Module.forward or "." in cls.__qualname__:
            return None
        file = getattr(sys.modules.get(cls.__module__), "__file__", None)
        if not file or not self.is_workspace_path(file):
            return None
        file = os.path.abspath(file)
        if file not in self.class_sources_by_file:
            try:
                self.class_sources_by_file[file] = top_level_classes(
                    source_text(file, self.overlays) or "")
            except SyntaxError:
                self.class_sources_by_file[file] = {}
        source = self.class_sources_by_file[file].get(cls.__name__)
        return None if source is None else (file, source)

    def located_failures(self, recorded: list[RecordedFailure],
                         source: ClassSource) -> list[Failure]:
        """Recorded failures located, one per (kind, place): a loop that fails on every
        pass is one problem."""
        failures: list[Failure] = []
        seen: set[tuple[str, str, int, int]] = set()
        for item in recorded:
            failure = self.failure(item.kind, item.message, item.stack, source.name_span)
            key = (failure.kind, failure.path, failure.line, failure.column)
            if key in seen:
                continue
            seen.add(key)
            failures.append(failure)
        mark_consequences(failures, self.sources)
        return failures



def _raised_in_patch_function(error: BaseException) -> bool:
    """True for torch.fx's failure to rewrite a ``*args``/``**kwargs`` wrapper's code."""
    tb = error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_name == "_patch_function":
            return True
        tb = tb.tb_next
    return False


def describe_exception(error: BaseException) -> str:
    """``Type: message``, even when the exception's own ``__str__`` raises."""
    name = type(error).__name__
    try:
        detail = str(error).strip()
        return f"{name}: {detail}" if detail else name
    except BaseException as formatting_error:  # user __str__ may raise anything
        return (f"{name} (its message could not be shown: its __str__ raised "
                f"{type(formatting_error).__name__})")


def run_job(job: TraceJob, send: Send) -> None:
    """Entry point inside a worker child."""
    try:
        JobRunner(job, send).run()
    except BaseException as error:  # never let the child die silently
        send(("fatal", "".join(traceback.format_exception(error))))
