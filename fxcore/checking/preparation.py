"""What the workspace tells a job before it reaches the engine, and a result after it comes back:
its classes' literal constructor calls (``fxcore.workspace.call_sites``) and builder functions
(``fxcore.workspace.builders``), whether the file is imported at all, and, in a notebook, which
left-out cell defines a name a class missed.

All of it is read in the host, from one read and parse of the job's file (``ParsedFile``),
which the engine reuses to locate the verdicts of classes whose child died.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fxcore.model.job_spec import MAX_OTHER_CALL_SITES, Builder, CallSite, TraceJob
from fxcore.model.results import CODES, Failure, FileResult, Range
from fxcore.workspace.builders import builder_functions
from fxcore.workspace.call_sites import CallSiteIndexes
from fxcore.workspace.discovery import ParsedFile, has_module_level_class, parsed_file
from fxcore.workspace.file_access import outside_target
from fxcore.workspace.notebook.cells import explain_dropped_names, is_notebook
from fxcore.workspace.paths import notebook_module
from fxcore.workspace.reading import linked_out_reason


@dataclass
class PreparedJob:
    """A job with what the workspace knows of its classes, and its file as read for that."""

    job: TraceJob
    parsed: ParsedFile

    @property
    def runs(self) -> bool:
        """Importing runs the file: a script with no module-level class (train.py) is never
        run. False only for a file that parses and has no module-level ``class``
        (``fxcore.workspace.discovery.has_module_level_class``); an unreadable file or a
        syntax error is run, and the worker says why without importing."""
        return self.parsed.tree is None or has_module_level_class(self.parsed.tree)

    def not_run(self) -> FileResult:
        """The result of a file that is not run: no verdicts, no errors."""
        return FileResult(path=self.job.path)


#: The failure kind (FX100) of a file a link takes out of its workspace, by which ``diff``
#: lists the files refused at the boundary.
LINKED_OUT = "linked-out"


def linked_out(job: TraceJob) -> FileResult | None:
    """The result of a file that a symbolic link takes out of its workspace
    (``fxcore.workspace.file_access.outside_target``): one FX100 on its first line, the file neither
    read nor imported; None for a file inside its workspace. Every check's jobs start here,
    whoever found their files."""
    real = outside_target(job.path, job.workspace_root)
    if real is None:
        return None
    message = (f"This file is {linked_out_reason(job.workspace_root, real)}: fx-lsp does not "
               "read or import it.")
    return FileResult(path=job.path, errors=[Failure(
        code=CODES[LINKED_OUT], kind=LINKED_OUT, message=message,
        **Range(1, 1, 1, 2).at(job.path))])


def prepare(job: TraceJob, call_sites: CallSiteIndexes) -> PreparedJob:
    """``job`` (with absolute paths) given its classes' call sites in ``call_sites`` and their
    builders in its file."""
    job = job.with_absolute_paths()
    parsed = parsed_file(job.path, job.overlays)
    if parsed.classes:
        found = call_sites.calls(job.workspace_root, parsed.classes, 1 + MAX_OTHER_CALL_SITES)
        job = with_call_sites(job, found)
        keyword_values = call_sites.keyword_values(job.workspace_root, parsed.classes)
        if keyword_values:
            job = dataclasses.replace(job, keyword_values=keyword_values)
        if parsed.tree is not None:
            job = with_builders(job, builder_functions(parsed.tree, parsed.classes))
    return PreparedJob(job, parsed)


def with_call_sites(job: TraceJob, found: Mapping[str, Sequence[CallSite]]) -> TraceJob:
    """The job with the workspace's literal constructor calls of its classes: each class's
    first builds its own instance, the others only the workspace classes it holds."""
    if not found:
        return job
    return dataclasses.replace(
        job, call_sites={name: sites[0] for name, sites in found.items()},
        other_call_sites={name: tuple(sites[1:]) for name, sites in found.items()
                          if len(sites) > 1})


def with_builders(job: TraceJob, found: dict[str, tuple[Builder, ...]]) -> TraceJob:
    """The job with the builder functions of its classes. They come from the file's own text,
    which the cache key already holds."""
    return dataclasses.replace(job, builders=found) if found else job


def explain_notebook_names(job: TraceJob, result: FileResult) -> None:
    """In a notebook's result, say which left-out cell defines a name a class missed."""
    if not is_notebook(job.path):
        return
    module = notebook_module(job.path, job.overlays)
    if module is not None:
        explain_dropped_names(result, module)
