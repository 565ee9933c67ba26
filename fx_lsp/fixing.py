"""``fx-lsp check --fix`` and ``--diff``: the edits of ``fxcore.fix_apply`` written to the files,
or printed as a diff, and what was fixed said on standard error."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import TextIO

from fx_lsp.check import CheckRun, display_path
from fx_lsp.escaping import log_line_start, terminal
from fx_lsp.shards import Shard
from fxcore import fix_apply
from fxcore.file_access import replace_text
from fxcore.report import Problem
from fxcore.workspace import find_workspace_root, source_text

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


def print_summary(edits: fix_apply.Edits, stream: TextIO, applied: bool) -> None:
    verb = "Fixed" if applied else "Would fix"
    count = len(edits.fixed)
    stream.write(f"{verb} {count} problem{'s' if count != 1 else ''} in "
                 f"{len(edits.files)} file{'s' if len(edits.files) != 1 else ''}.\n")
    for problem, title in edits.fixed:
        where = log_line_start(terminal(display_path(problem.path)))
        stream.write(f"  {where}:{problem.line}:{problem.column}: {problem.code}: "
                     f"{terminal(title)}\n")


def write_edits(edits: fix_apply.Edits) -> None:
    for path, (_, new) in edits.files.items():
        replace_text(path, new)


def fix_until_done(check_run: CheckRun, shard: Shard | None,
                   run: Callable[[], tuple[CheckRun, Shard | None]], unsafe: bool,
                   stream: TextIO) -> tuple[CheckRun, Shard | None]:
    """Apply fixes and trace again until none applies; the last run is what remains."""
    done = fix_apply.Edits()
    for _ in range(MAX_FIX_ROUNDS):
        edits = plan_edits(check_run.report.problems, unsafe)
        if not edits.files:
            break
        write_edits(edits)
        done.fixed += edits.fixed
        done.files.update({path: (done.files.get(path, texts)[0], texts[1])
                           for path, texts in edits.files.items()})
        check_run, shard = run()
    print_summary(done, stream, applied=True)
    return check_run, shard
