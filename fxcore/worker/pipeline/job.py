"""What a worker child does with one ``TraceJob``: import the file, then for each
``nn.Module`` class build an instance once (``building``), keep the instance that fits it
(``fitting_instance``), capture it with each configured mode (``capturing``: its inputs
decided, then ``EngineConfig.modes`` looked up in ``CAPTURES``) and send one verdict per mode
(``verdict``); then the workspace classes that the built roots hold as submodules, as the very
instances the roots built, likewise per mode (``submodule_instances``).

This module runs user code; it is only ever called inside a forked child (see
``fxcore.host.engine``). Results are sent one class at a time so that a class that hangs or
crashes the child costs only its own result.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import importlib
import keyword
import os
import sys
import traceback
from collections.abc import Callable
from types import ModuleType

import torch

from fxcore.model.instance_trust import does_not_fit
from fxcore.model.job_spec import TraceJob
from fxcore.model.results import CODES, Failure, FileResult, ModuleResult, Range
from fxcore.protocol.worker_messages import (
    Classes,
    Fatal,
    FileDone,
    Start,
    Verdict,
    WorkerMessage,
)
from fxcore.worker.building.class_roles import base_reason, not_a_model_reason
from fxcore.worker.building.instances import Built, build_class
from fxcore.worker.capture.base import Capture
from fxcore.worker.capture.modes import CAPTURES
from fxcore.worker.devices.cuda_factories import cuda_tensors_at_import
from fxcore.worker.devices.cuda_view import cuda_view
from fxcore.worker.devices.device_choice import device_setting, judged_device
from fxcore.worker.job.job_context import JobContext
from fxcore.worker.pipeline.capturing import built_verdict
from fxcore.worker.pipeline.fitting_instance import fitting_instance, target_of
from fxcore.worker.pipeline.submodule_instances import SubmoduleInstances
from fxcore.worker.running.seeding import seed_generators
from fxcore.worker.running.time_limit import OutOfTime
from fxcore.worker.source.import_overlay import imported_third_party_packages, install_import_paths
from fxcore.workspace.discovery import ClassSource
from fxcore.workspace.file_access import MAX_FILE_BYTES, UnreadableFile, read_bytes
from fxcore.workspace.notebook.cells import (
    MAX_NOTEBOOK_BYTES,
    is_notebook,
    unreadable_notebook_reason,
)
from fxcore.workspace.parsing import SourceTooComplex
from fxcore.workspace.paths import notebook_json
from fxcore.workspace.suppressions import SKIP_REASON

#: Sends a message to the engine (``fxcore.protocol.worker_messages``).
Send = Callable[[WorkerMessage], None]

class Job:
    """Imports one file and sends the verdict of each of its classes, inside a worker."""

    def __init__(self, job: TraceJob, send: Send, captures: list[Capture]) -> None:
        self.job = job
        #: (class, mode) of each verdict sent: a class stopped half way gets the others.
        self.judged: set[tuple[str, str]] = set()

        def sending(message: WorkerMessage) -> None:
            if isinstance(message, Verdict):
                self.judged.add((message.module.class_name, message.module.mode))
            send(message)

        self.send = sending
        self.captures = captures
        self.context = JobContext(job)
        #: The instances of workspace classes that the file's roots build, traced after them.
        self.submodules = SubmoduleInstances(job, self.context, captures, send)

    def run(self) -> None:
        context = self.context
        file_result = FileResult(path=context.path)
        parsed = context.parsed(context.path)  # read before importing it
        if parsed.text is None:
            file_result.errors.append(self.file_failure(self.unreadable_reason()))
            self.send(FileDone(file_result))
            return
        if parsed.syntax_error is not None:
            file_result.errors.append(self.syntax_failure(parsed.syntax_error))
            self.send(FileDone(file_result))
            return
        class_sources = parsed.classes

        unimportable = self.unimportable_reason()
        if unimportable is not None:
            file_result.errors.append(self.file_failure(unimportable))
            self.send(FileDone(file_result))
            return
        # Importable as users import it, with buffers in place of files. The script folder
        # comes first: a namespace package's module may import a sibling by bare name too.
        entries = (context.root, os.path.join(context.root, "src"),
                   context.location.sys_path_entry, context.location.script_folder)
        # A notebook imports as the module of its cells (``fxcore.workspace.notebook``), as read.
        notebooks = {context.location.module_name: (context.path, parsed.text)} \
            if is_notebook(context.path) else {}
        context.imports = install_import_paths(entries, context.overlays,
                                               context.is_workspace_path, notebooks)
        # Imported in a GPU's view where a class is judged for one: module-level code such as
        # `DEVICE = "cuda" if torch.cuda.is_available() else "cpu"` runs as on that GPU, and
        # its CUDA tensors (`MASK = torch.ones(4, device="cuda")`) are made without one.
        on_gpu = any(self.class_device(context, parsed.tree, name) == "cuda"
                     for name in class_sources)
        try:
            with cuda_view() if on_gpu else contextlib.nullcontext(), cuda_tensors_at_import():
                module = importlib.import_module(context.location.module_name)
        except BaseException as error:  # user code may raise anything, SystemExit included
            file_result.errors.append(
                context.exception_failure("import", "Importing this file failed: ", error,
                                          Range(1, 1, 1, 1))
            )
            context.record_imports(file_result)
            file_result.third_party_packages = imported_third_party_packages(
                context.loaded_modules, context.is_workspace_path)
            self.send(FileDone(file_result))
            return
        imported_file = getattr(module, "__file__", None)
        if not (isinstance(imported_file, str)
                and os.path.abspath(imported_file) == context.path):
            name = context.location.module_name
            file_result.errors.append(self.file_failure(
                f"This file cannot be imported under its own name: `import {name}` loads "
                f"{imported_file or 'a module without a file'} instead (a package or module of "
                f"the same name comes first on the import path). Rename the file to trace it."
            ))
            context.record_imports(file_result)
            self.send(FileDone(file_result))
            return

        classes = self.module_classes(module, class_sources)
        self.send(Classes([cls.__name__ for cls in classes]))
        # Classes never traced as a root's submodule (skipped, or with arguments of their own);
        # and, per class traced as one, the rank (``parent_rank``) of the root that built it:
        # a more trusted root later in the file traces its own instance of the class again.
        not_derived: set[type] = set()
        derived_ranks: dict[type, int] = {}
        for cls in classes:
            self.send(Start(cls.__name__))
            source = class_sources[cls.__name__]
            if context.is_skipped(context.path, source):
                not_derived.add(cls)
                self.send_per_mode(context.module_result(cls, source, status="not-traced",
                                                         reason=SKIP_REASON))
                continue
            not_a_model = not_a_model_reason(context, cls, source)
            if not_a_model is not None:
                not_derived.add(cls)
                self.send_per_mode(context.module_result(cls, source, status="not-traced",
                                                         reason=not_a_model))
                continue
            # Built and captured in the view of the device it is judged for, as are the
            # instances of workspace classes it holds.
            device = self.class_device(context, parsed.tree, cls.__name__)
            with cuda_view() if device == "cuda" else contextlib.nullcontext():
                self.judge_alone(context, cls, source, not_derived, derived_ranks)
        context.record_imports(file_result)
        file_result.third_party_packages = imported_third_party_packages(
            context.loaded_modules, context.is_workspace_path)
        self.send(FileDone(file_result))

    def class_device(self, context: JobContext, tree: ast.Module | None,
                     class_name: str) -> str:
        """``cpu`` or ``cuda``: the device a class of this file is judged for."""
        setting = device_setting(self.job.config, context.module_config(class_name),
                                 context.path, context.root)
        return judged_device(setting, tree, class_name)

    def judge_alone(self, context: JobContext, cls: type, source: ClassSource,
                    not_derived: set[type], derived_ranks: dict[type, int]) -> None:
        """``build_and_capture``, whatever escapes it this class's failure in each mode it
        has no verdict in yet, so that the file's other classes are judged still: user code's
        ``SystemExit``, ``KeyboardInterrupt`` or ``GeneratorExit`` (from a constructor, a
        hook, ``example_input_array``, ``dummy_inputs`` or ``forward``, which the stages
        catching ``Exception`` let through), or a break of fx-lsp's own. A time-out of the
        per-run timer is the host's to report, as before."""
        try:
            self.build_and_capture(context, cls, source, not_derived, derived_ranks)
        except OutOfTime:
            raise
        except BaseException as error:
            if isinstance(error, Exception):
                _given_up(cls.__name__, error)
            kind = "error" if isinstance(error, Exception) else "exited"
            failure = context.exception_failure(kind, f"Judging {cls.__name__} stopped: ",
                                                error, source.name_span)
            for capture in self.captures:
                if (cls.__name__, capture.mode) not in self.judged:
                    self.send(Verdict(context.module_result(
                        cls, source, status="failed", failures=[failure], mode=capture.mode)))

    def build_and_capture(self, context: JobContext, cls: type, source: ClassSource,
                          not_derived: set[type], derived_ranks: dict[type, int]) -> None:
        """Build ``cls``, send its verdicts, then those of the workspace classes its instance
        holds and its other call sites build."""
        seed_generators()  # the same instance (CPU-built weights, draws) on every run
        built = build_class(context, cls, source)
        if isinstance(built, ModuleResult):
            self.send_per_mode(built)
            return
        built, root_results = self.capture_fitting_instance(context, cls, source, built)
        # Verdicts of submodule instances are extras: the file's own classes, still to
        # come, must not be lost to a module tree that breaks named_modules(). What is
        # given up is said on the job's output (the server's log, `fx-lsp check -v`).
        try:
            self.submodules.trace_built(root_results, built, not_derived, derived_ranks)
        except Exception as error:
            _given_up(f"the submodule instances of {cls.__name__}", error)
        del built  # the instance goes before the next class is built
        try:
            self.submodules.trace_other_call_sites(cls, root_results, not_derived,
                                                   derived_ranks)
        except Exception as error:
            _given_up(f"the instances {cls.__name__}'s other call sites build", error)

    def capture_fitting_instance(self, context: JobContext, cls: type, source: ClassSource,
                                 built: Built) -> tuple[Built, list[ModuleResult]]:
        """Capture the class with each mode and send the verdicts; the instance captured and
        the verdicts, in the order of the modes.

        When torch.fx (else the first mode) finds that the instance does not fit the class
        (FX105, FX406, FX504, or shapes that fit no input on its own guessed arguments),
        other instances are traced (``fxcore.worker.pipeline.fitting_instance``, bounded by
        the class's time-out; the worker sends nothing meanwhile), and every mode captures
        the one kept."""
        # torch.fx judges the instance; without it, the first mode (export, compile).
        judge = next((capture for capture in self.captures if capture.mode == "fx"),
                     self.captures[0] if self.captures else None)
        # One target for every mode: inputs decided for one mode serve the next.
        target = target_of(cls, source, built)
        judged_result = None
        if judge is not None:
            built, target, judged_result = fitting_instance(context, cls, source, built, judge,
                                                            self.job.config.timeout)
        base = None if judged_result is None or not does_not_fit(judged_result) else \
            base_reason(cls, " ".join([judged_result.reason or "", *(
                failure.message for failure in judged_result.failures)]))
        if base is not None:
            return built, self.send_per_mode(
                context.module_result(cls, source, status="not-traced", reason=base))
        results = []
        for capture in self.captures:
            results.append(judged_result if capture is judge and judged_result is not None
                           else built_verdict(context, capture, target, built))
            self.send(Verdict(results[-1]))
        return built, results

    def send_per_mode(self, result: ModuleResult) -> list[ModuleResult]:
        """Send a verdict made before any capture (not built, skipped) as each mode's; the
        verdicts sent, in the order of the modes."""
        results = [dataclasses.replace(result, mode=capture.mode) for capture in self.captures]
        for each in results:
            self.send(Verdict(each))
        return results

    # -- the file --------------------------------------------------------------------------

    def file_failure(self, message: str) -> Failure:
        return Failure(code=CODES["import"], kind="import", message=message,
                       **Range(1, 1, 1, 2).at(self.context.path))

    def unreadable_reason(self) -> str:
        path = self.context.path
        if os.path.islink(path) and not os.path.exists(path):
            return (f"This file is a symbolic link to {os.readlink(path)}, which does "
                    "not exist.")
        try:
            read_bytes(path, MAX_NOTEBOOK_BYTES if is_notebook(path) else MAX_FILE_BYTES)
        except UnreadableFile as error:
            return f"This file is {error}."
        except OSError as error:
            return f"This file cannot be read: {error.strerror or error}."
        if is_notebook(path):
            raw = notebook_json(path, self.context.overlays)
            problem = unreadable_notebook_reason(raw) if raw is not None else None
            if problem is not None:
                return f"This notebook cannot be read: {problem}."
        return "This file cannot be read as UTF-8 text."

    def unimportable_reason(self) -> str | None:
        """Why the file cannot be imported under its own module name, if it cannot."""
        name = self.context.location.module_name
        filename = os.path.basename(self.context.path)
        stem = os.path.splitext(filename)[0]
        # A notebook's stem is made a module name (``notebook_module_name``).
        if not all(part.isidentifier() and not keyword.iskeyword(part)
                   for part in [*([] if is_notebook(filename) else [stem]),
                                *name.split(".")]):
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
            **Range(line, column, end_line, end_column).at(self.context.path),
        )

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
                and name not in self.job.reused_classes
            ):
                found.append(value)
        return sorted(found, key=lambda cls: sources[cls.__name__].name_span.line)


def _given_up(what: str, error: Exception) -> None:
    """Say on the job's output (which the host logs) that tracing ``what`` was given up, with
    the traceback: a break of fx-lsp's own code must not go unseen."""
    print(f"fx-lsp: gave up tracing {what}:", file=sys.stderr)
    traceback.print_exception(error, file=sys.stderr)


def run_job(job: TraceJob, send: Send) -> None:
    """Entry point inside a worker child."""
    try:
        Job(job, send, [CAPTURES[mode] for mode in job.config.modes]).run()
    except BaseException as error:  # never let the child die silently
        send(Fatal("".join(traceback.format_exception(error))))
