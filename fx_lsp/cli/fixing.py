"""``fx-lsp check --fix`` and ``--diff``: the edits of ``fxcore.fixing.fix_apply`` written to the
files,
or printed as a diff, and what was fixed said on standard error."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Protocol, TextIO, TypeVar

from fx_lsp.cli.shards import Shard
from fx_lsp.escaping import log_line_start, terminal
from fxcore.fixing import fix_apply
from fxcore.reporting.report import Problem, Report
from fxcore.reporting.shown import Places, display_path
from fxcore.workspace.file_access import replace_workspace_text
from fxcore.workspace.notebook.cells import is_notebook
from fxcore.workspace.notebook.json_edits import NotebookEditError, edit_notebook_json
from fxcore.workspace.notebook.module_builder import notebook_module_of_json
from fxcore.workspace.paths import find_workspace_root, notebook_json, source_text

#: ``--fix`` traces again after applying fixes, as many times as fixes keep applying (a fix
#: can let tracing reach further), at most this often.
MAX_FIX_ROUNDS = 4


def text_on_disk(path: str) -> str | None:
    """A file's text as fixes edit it: None unless UTF-8, since they write it back."""
    return source_text(path, {}, strict=True)


def plan_edits(problems: list[Problem], unsafe: bool) -> fix_apply.Edits:
    return fix_apply.plan_edits(problems, text_on_disk, find_workspace_root, unsafe)


def print_diff(edits: fix_apply.Edits, stream: TextIO) -> None:
    """A unified diff per file; control characters in the lines shown as ruff shows them
    (the line ends kept), so a file cannot control the terminal through its diff."""
    for path, (old, new) in edits.files.items():
        shown = terminal(display_path(path))
        for line in difflib.unified_diff(
                (old or "").splitlines(keepends=True), new.splitlines(keepends=True),
                fromfile=shown if old is not None else "/dev/null", tofile=shown):
            body = line.rstrip("\r\n")
            stream.write(terminal(body) + line[len(body):])


def print_summary(edits: fix_apply.Edits, stream: TextIO, applied: bool,
                  lines: list[str] | None = None) -> None:
    """How many problems were (or would be) fixed, and a line each: ``lines`` when given
    (said before the files changed: a notebook's cell lines move with a fix), else
    ``fixed_line``."""
    verb = "Fixed" if applied else "Would fix"
    count = len(edits.fixed)
    stream.write(f"{verb} {count} problem{'s' if count != 1 else ''} in "
                 f"{len(edits.files)} file{'s' if len(edits.files) != 1 else ''}.\n")
    if lines is None:
        places = Places()
        lines = [fixed_line(problem, title, places) for problem, title in edits.fixed]
    for line in lines:
        stream.write(line)


def fixed_line(problem: Problem, title: str, places: Places) -> str:
    """``  model.py:12:5: FX002: Wrap len ...`` (``nb.ipynb:cell 3:5:1`` in a notebook)."""
    where = log_line_start(terminal(places.at(problem.path, problem.line,
                                              problem.column).words))
    return f"  {where}: {problem.code}: {terminal(title)}\n"


def written_text(path: str, old: str | None, new: str) -> str:
    """What a fixed file's text is written as: ``new``, or for a notebook, its JSON with the
    fixed module's lines put into their cells
    (``fxcore.workspace.notebook.json_edits.edit_notebook_json``). Raises
    ``NotebookEditError`` when the notebook changed since, or the edit does not fit its
    cells."""
    if not is_notebook(path):
        return new
    raw = notebook_json(path, {}, strict=True)
    module = notebook_module_of_json(raw) if raw is not None else None
    if raw is None or module is None or module.text != old:
        raise NotebookEditError("the notebook changed since it was checked")
    return edit_notebook_json(raw, new)


def notebook_edits(edits: fix_apply.Edits, stream: TextIO) -> fix_apply.Edits:
    """``edits`` with each notebook's new text its JSON (``written_text``); a notebook whose
    edit cannot be put into its cells is left as it is, and said so on ``stream``, as are the
    fixes not made (``Edits.refused``: a link leading out of the workspace)."""
    kept = fix_apply.Edits()
    refused = set()
    for problem, reason in edits.refused:
        stream.write(f"{log_line_start(terminal(display_path(problem.path)))}: not fixed: "
                     f"{terminal(reason)}\n")
    for path, (old, new) in edits.files.items():
        try:
            kept.files[path] = (notebook_json(path, {}, strict=True) if is_notebook(path)
                                else old, written_text(path, old, new))
        except NotebookEditError as error:
            refused.add(path)
            stream.write(f"{log_line_start(terminal(display_path(path)))}: not fixed: "
                         f"{terminal(str(error))}\n")
    kept.fixed = [(problem, title) for problem, title in edits.fixed
                  if problem.path not in refused]
    return kept


def write_edits(edits: fix_apply.Edits) -> None:
    """Write the fixed texts (as ``notebook_edits`` made them)."""
    for path, (_, new) in edits.files.items():
        replace_workspace_text(path, new, find_workspace_root(path))


class Checked(Protocol):
    """A run whose report's problems fixes are planned from (``fx_lsp.cli.check.CheckRun``)."""

    report: Report


Run = TypeVar("Run", bound=Checked)


def fix_until_done(check_run: Run, shard: Shard | None,
                   run: Callable[[], tuple[Run, Shard | None]], unsafe: bool,
                   stream: TextIO) -> tuple[Run, Shard | None]:
    """Apply fixes and trace again until none applies; the last run is what remains."""
    done = fix_apply.Edits()
    lines: list[str] = []
    for _ in range(MAX_FIX_ROUNDS):
        edits = notebook_edits(plan_edits(check_run.report.problems, unsafe), stream)
        if not edits.files:
            break
        # Said before writing: the cells as this run found its problems in them.
        places = Places()
        lines += [fixed_line(problem, title, places) for problem, title in edits.fixed]
        write_edits(edits)
        done.fixed += edits.fixed
        done.files.update({path: (done.files.get(path, texts)[0], texts[1])
                           for path, texts in edits.files.items()})
        check_run, shard = run()
    print_summary(done, stream, applied=True, lines=lines)
    return check_run, shard
