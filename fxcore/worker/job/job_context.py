"""What the stages of a job share inside a worker: the job's paths and sources, the classes'
source ranges, and the builders of located failures and module results.

One ``JobContext`` per job. A verdict about a class in another workspace file (a submodule
that a root built) is made with ``in_file``, a context that locates and names results in
that file while sharing the job's caches.
"""

from __future__ import annotations

import ast
import copy
import linecache
import os
import sys
from typing import Any

import torch

from fxcore.model.job_spec import ModuleConfig, TraceJob
from fxcore.model.results import CODES, Failure, FileResult, Frame, ModuleResult, Range
from fxcore.rules import BY_CODE
from fxcore.worker.job.capture_target import RecordedFailure
from fxcore.worker.job.consequences import mark_consequences
from fxcore.worker.source.import_overlay import (
    ImportRecord,
    ModulesLoadedSince,
    imported_workspace_files,
)
from fxcore.worker.source.locate import (
    RawPosition,
    SourceIndex,
    innermost_workspace_frame,
    to_frame,
    traceback_positions,
)
from fxcore.workspace.discovery import ClassSource, ParsedFile, parsed_file
from fxcore.workspace.module_config import module_config_for
from fxcore.workspace.notebook.cells import is_notebook
from fxcore.workspace.paths import (
    import_location,
    is_workspace_file,
    leaf_module_frames,
)
from fxcore.workspace.suppressions import skipped_lines


def describe_exception(error: BaseException) -> str:
    """``Type: message``, even when the exception's own ``__str__`` raises."""
    name = type(error).__name__
    try:
        detail = str(error).strip()
        return f"{name}: {detail}" if detail else name
    except BaseException as formatting_error:  # user __str__ may raise anything
        return (f"{name} (its message could not be shown: its __str__ raised "
                f"{type(formatting_error).__name__})")


def first_line(text: str) -> str:
    """The first line of ``text`` that says something, stripped; empty for none."""
    return text.strip().splitlines()[0].strip() if text.strip() else ""


class JobContext:
    """One job's paths, sources and result builders, shared by its stages."""

    def __init__(self, job: TraceJob) -> None:
        self.job = job
        self.path = os.path.abspath(job.path)
        self.root = os.path.abspath(job.workspace_root)
        self.overlays = {os.path.abspath(p): text for p, text in job.overlays.items()}
        # A notebook's overlay is its JSON: its lines are those of its module, which
        # ``parsed`` adds.
        self.sources = SourceIndex({path: text for path, text in self.overlays.items()
                                    if not is_notebook(path)})
        # Modules loaded before the job (torch and the like) are never workspace files.
        self.loaded_modules = ModulesLoadedSince()
        #: What the imports compiled and missed, once the import paths are installed.
        self.imports = ImportRecord()
        #: Workspace files as read (this file before importing it) and parsed, once each.
        self.parsed_files: dict[str, ParsedFile] = {}
        self.skipped_lines_by_file: dict[str, set[int]] = {}
        self.location = import_location(self.path, self.text_of)

    def in_file(self, file: str) -> JobContext:
        """This job's context, locating and naming results in the workspace file ``file``."""
        other = copy.copy(self)
        other.path = file
        other.location = import_location(file, self.text_of)
        return other

    def text_of(self, file: str) -> str | None:
        """A workspace file's text as imported: its buffer, else the file on disk, read once
        per job (``parsed``: the import name's reading of imports, discovery and failures
        located in it share that read)."""
        return self.parsed(os.path.abspath(file)).text

    def parsed(self, file: str) -> ParsedFile:
        """The workspace file ``file``, read and parsed once per job; failures located in it
        use the same text and tree (``sources``)."""
        if file not in self.parsed_files:
            parsed = self.parsed_files[file] = parsed_file(file, self.overlays)
            if parsed.text is not None:
                self.sources.add(file, parsed.text, parsed.tree)
                # ``inspect.getsource`` (the readers of ``__init__``'s and ``forward``'s code)
                # then reads this text, as imported (an editor's buffer, a notebook's cells),
                # not the file again; no mtime: ``linecache.checkcache`` keeps it.
                linecache.cache[file] = (len(parsed.text), None,
                                         parsed.text.splitlines(keepends=True), file)
        return self.parsed_files[file]

    def module_config(self, class_name: str) -> ModuleConfig:
        """``[tool.fx-lsp.modules."<this file's module>:<class_name>"]``."""
        return module_config_for(self.job.config, self.location.module_name, class_name)

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
        # The leaf-module advice is torch.fx's: export and compile go through library code.
        # A leaf hides a failure of tracing, not an instance that does not fit (FX105, a hint).
        rule = BY_CODE[CODES[kind]]
        layer = self.third_party_layer(frames) \
            if rule.mode in ("fx", "any") and rule.severity == "error" else None
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
        """``package.module:Class`` of the library ``nn.Module`` (an einops ``Rearrange``)
        when it is the innermost module the failure happened in that a leaf could make
        opaque; None when that is the workspace's own class, which the quick fix offers."""
        for frame in leaf_module_frames(frames):
            if self.is_workspace_path(frame.path):
                return None
            tree = self.sources.tree(frame.path)
            if tree is None:
                return None
            for node in tree.body:
                if isinstance(node, ast.ClassDef) and \
                        node.lineno <= frame.line <= (node.end_lineno or node.lineno):
                    return f"{import_location(frame.path, self.text_of).module_name}:{node.name}"
            return None
        return None

    def exception_failure(self, kind: str, prefix: str, error: BaseException,
                          fallback: Range) -> Failure:
        detail = describe_exception(error)
        return self.failure(kind, f"{prefix}{detail}", traceback_positions(error.__traceback__),
                            fallback)

    def located_failures(self, recorded: list[RecordedFailure], source: ClassSource,
                         apart_by_origin: bool = False) -> list[Failure]:
        """Recorded failures located, one per (kind, place): a loop that fails on every
        pass is one problem.

        ``apart_by_origin`` (graph breaks) keeps apart those whose innermost frame differs:
        two library lines reached from one workspace line are two problems. A failure with
        no workspace frame in its stack (located on the class) whose kind and innermost
        frame were already seen is the same problem met again: dynamo compiles a library
        function alone after a break in it, without the caller's frames."""
        failures: list[Failure] = []
        seen: set[tuple[object, ...]] = set()
        origins: set[tuple[str, str, int]] = set()
        for item in recorded:
            failure = self.failure(item.kind, item.message, item.stack, source.name_span)
            key: tuple[object, ...] = (failure.kind, failure.path, failure.line, failure.column)
            if apart_by_origin and failure.frames:
                origin = (failure.kind, failure.frames[-1].path, failure.frames[-1].line)
                key += origin
                if origin in origins and not any(self.is_workspace_path(frame.path)
                                                 for frame in failure.frames):
                    continue
                origins.add(origin)
            if key in seen:
                continue
            seen.add(key)
            failures.append(failure)
        mark_consequences(failures, self.sources)
        return failures

    # -- results ---------------------------------------------------------------------------

    def module_result(self, cls: type, source: ClassSource, **fields: Any) -> ModuleResult:
        return ModuleResult(
            **source.name_span.at(self.path),
            class_name=cls.__name__,
            qualified_name=f"{self.location.module_name}:{cls.__name__}",
            forward=source.forward,
            **fields,
        )

    def imported_workspace_files(self) -> list[str]:
        """This file and the workspace files its import loaded."""
        found = imported_workspace_files(self.loaded_modules, self.is_workspace_path)
        return sorted({*found, self.path})

    def record_imports(self, file_result: FileResult) -> None:
        """The workspace files loaded, the hashes of the bytes the imports compiled (a file
        edited during or after its import, or by it, does not vouch for this result under
        its new text) and the modules not found in the workspace."""
        # Files whose module then failed count too: their text made the result.
        file_result.imported_files = sorted({*self.imported_workspace_files(),
                                             *self.imports.compiled_files()})
        file_result.imported_hashes = self.imports.stable_hashes()
        file_result.missing_modules = dict(self.imports.missing)
        file_result.failed_assignments = list(self.imports.failed_assignments)

    # -- classes ---------------------------------------------------------------------------

    def is_skipped(self, file: str, source: ClassSource) -> bool:
        """The class line has ``# fx-lsp: skip``."""
        if file not in self.skipped_lines_by_file:
            self.skipped_lines_by_file[file] = skipped_lines(self.parsed(file).text or "")
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
        source = self.parsed(file).classes.get(cls.__name__)
        return None if source is None else (file, source)
