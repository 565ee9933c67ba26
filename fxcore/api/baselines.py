"""A run's baseline file (``fxcore.reporting.baseline``'s format): found, read, written, and
subtracted from the run's report before any adapter shows it."""

from __future__ import annotations

import os
from dataclasses import dataclass

from fxcore.model.results import FileResult
from fxcore.reporting import baseline
from fxcore.reporting.report import Problem, Report
from fxcore.workspace.file_access import (
    UnreadableFile,
    UnsafeWrite,
    check_output_path,
    read_text,
    write_output_text,
)
from fxcore.workspace.paths import find_workspace_root, source_text


class BaselineProblem(Exception):
    """A baseline file that cannot be read or written: the command stops (exit status 2)."""


@dataclass
class BaselineFile:
    """Where the run's baseline is, and the workspace root its file names are relative to."""

    path: str
    root: str
    #: Given on the command line (``--baseline``): it must exist to be read; the default one
    #: is used only when present.
    named: bool
    #: The path as the command line named it: written only where ``--output-file`` may
    #: write (``check_output_path``: a relative one through no linked folder). None: ``path``.
    as_named: str | None = None


@dataclass
class BaselineOutcome:
    """What was done with a run's baseline file."""

    where: BaselineFile
    #: How many entries were written (``writes``); None: it was only read.
    written: int | None
    #: The entries of checked files no problem matched (fixed since); None: no file.
    fixed: list[baseline.Entry] | None


def locate(paths: list[str], named: str | None) -> BaselineFile:
    """The baseline of a run over ``paths``: ``named``, else ``.fx-lsp-baseline.json`` at the
    workspace root of the first path; file names in it are relative to that root."""
    root = find_workspace_root(os.path.abspath(paths[0]))
    if named is not None:
        return BaselineFile(os.path.abspath(named), root, True, named)
    return BaselineFile(os.path.join(root, baseline.BASELINE_NAME), root, False)


def read(where: BaselineFile) -> list[baseline.Entry] | None:
    """The file's entries; None when the default file is absent."""
    if not os.path.lexists(where.path) and not where.named:
        return None
    try:
        return baseline.loads(read_text(where.path, errors="strict",
                                        limit=baseline.MAX_BASELINE_BYTES))
    except (OSError, UnreadableFile, UnicodeDecodeError) as error:
        raise BaselineProblem(f"cannot read the baseline {where.path}: "
                              f"{getattr(error, 'strerror', None) or error}") from error
    except baseline.BaselineError as error:
        raise BaselineProblem(f"the baseline {where.path}: {error}") from error


def _text(path: str) -> str | None:
    return source_text(path, {})


def _items(report: Report, where: BaselineFile) -> list[tuple[Problem, baseline.Entry]]:
    return [(problem, baseline.entry_of(problem, where.root, _text))
            for problem in report.problems]


def _settled(results: list[FileResult], where: BaselineFile,
             entries: list[baseline.Entry]) -> set[str]:
    """The files whose entries this run can judge: those it checked, and those of
    ``entries`` that are gone from the disk (a deleted file's problems are fixed)."""
    checked = {baseline.relative_file(result.path, where.root) for result in results}
    return checked | {entry.file for entry in entries
                      if not os.path.lexists(os.path.join(where.root, entry.file))}


def entries_kept(where: BaselineFile) -> list[baseline.Entry]:
    """The entries of the file at ``where`` that ``write`` starts from, once it is known that
    the file may be written there. A file that cannot be read is refused, never taken as
    empty: a run over part of the workspace would drop every other file's entries."""
    try:
        check_output_path(where.as_named or where.path)
    except UnsafeWrite as error:
        raise BaselineProblem(f"cannot write the baseline {error}") from error
    try:
        return read(BaselineFile(where.path, where.root, False)) or []
    except BaselineProblem as error:
        raise BaselineProblem(f"{error}; --write-baseline rewrites only a baseline it can "
                              "read: mend the file or remove it, then run again") from error


def write(report: Report, results: list[FileResult], where: BaselineFile) -> int:
    """Record every problem of ``report``, keeping an existing file's entries of files the
    run did not check (``results``); written never through a link (``write_output_text``)
    and never over a file that cannot be read (``entries_kept``). Returns how many entries
    the file holds."""
    old = entries_kept(where)
    entries = [entry for _, entry in _items(report, where)]
    entries += baseline.kept_on_rewrite(old, _settled(results, where, old))
    text = baseline.dumps(entries)
    if len(text.encode()) > baseline.MAX_BASELINE_BYTES:
        raise BaselineProblem(f"cannot write the baseline {where.path}: {len(entries):,} "
                              f"entries are more than the {baseline.MAX_BASELINE_BYTES:,} "
                              "bytes fx-lsp reads of a baseline")
    try:
        write_output_text(where.path, text)
    except (OSError, ValueError) as error:
        raise BaselineProblem(f"cannot write the baseline {where.path}: "
                              f"{getattr(error, 'strerror', None) or error}") from error
    return len(entries)


def apply(report: Report, results: list[FileResult], where: BaselineFile,
          entries: list[baseline.Entry]) -> list[baseline.Entry]:
    """Take the baselined problems out of ``report`` (counted in ``report.baselined``) and
    return the entries of checked files (``results``) that no problem matched: fixed
    since."""
    matched = baseline.match(_items(report, where), entries,
                             _settled(results, where, entries))
    report.problems = list(matched.reported)
    report.baselined = len(matched.baselined)
    return matched.fixed


def subtract(report: Report, results: list[FileResult],
             where: BaselineFile) -> list[baseline.Entry] | None:
    """Take what the baseline at ``where`` holds out of ``report`` (``apply``); None when
    the default file is absent."""
    entries = read(where)
    if entries is None:
        return None
    return apply(report, results, where, entries)
