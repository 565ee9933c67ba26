"""``fx-lsp diff BASE [HEAD]``: what a change did to the graphs. The classes of the Python
files that differ between two git revisions (HEAD: the working tree when not given), and of
the files importing them, are checked at both (``fx_lsp.cli.check``, results cached), and each
class's changes per capture mode are printed (``fxcore.reporting.graph_diff``)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, TextIO

from fx_lsp.cli import git_revisions
from fx_lsp.escaping import terminal
from fxcore.reporting import graph_diff

if TYPE_CHECKING:
    from fx_lsp.cli.check import CheckRun
    from fxcore.checking.pipeline import Pipeline
    from fxcore.host.engine import Engine

FORMATS = ("table", "json", "markdown")


def add_parser(commands: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]
               ) -> None:
    diff = commands.add_parser(
        "diff", parents=parents,
        help="what a change did to the graphs: the classes of the files that differ between "
        "two git revisions, and of the files importing them, checked at both")
    diff.add_argument("base", metavar="BASE", help="the git revision before the change")
    diff.add_argument("head", metavar="HEAD", nargs="?", default=None,
                      help="the git revision after it (default: the working tree)")
    diff.add_argument("--output-format", "--format", dest="output_format", choices=FORMATS,
                      default="table",
                      help="table (the default), json, or markdown (for a pull request's "
                      "comment)")
    diff.add_argument("--output-file", metavar="PATH", default=None)
    diff.add_argument("--fail-on", choices=["regression"], default=None,
                      help="exit with status 1 when a class got worse in a mode (failed, "
                      "graph breaks or problems it did not have, no longer checkable)")
    diff.add_argument("--mode", metavar="MODES", default=None,
                      help="capture modes, comma-separated (default: `modes` of each "
                      "revision's [tool.fx-lsp], else fx)")
    diff.add_argument("--timeout", type=float, default=None,
                      help="seconds per class before its worker is stopped (default 20)")
    diff.add_argument("--workers", type=int, default=None,
                      help="worker processes (default: all cores)")


def _checked(folder: str, changed: list[str], arguments: argparse.Namespace,
             modes: tuple[str, ...] | None, engine: Engine | Pipeline, progress: bool
             ) -> tuple[dict[graph_diff.ClassKey, graph_diff.ClassState], CheckRun | None]:
    """The states of the classes of ``changed`` and of their importers in ``folder``."""
    from fx_lsp.cli.check import check_jobs, run_jobs

    present = [path for path in changed if os.path.isfile(os.path.join(folder, path))]
    files = sorted(set(present) | git_revisions.importers(folder, changed))
    if not files:
        return {}, None
    jobs, projects = check_jobs([os.path.join(folder, path) for path in files],
                                arguments.timeout, modes)
    run = run_jobs(jobs, projects, None, True, progress, engine)
    modules = [module for result in run.results for module in result.modules]
    return graph_diff.states(modules, folder), run


@contextlib.contextmanager
def _revision(root: str, revision: str | None) -> Iterator[str]:
    # A revision the working tree holds (HEAD of a clean checkout, as in CI) is checked in
    # place: its results are then those a `fx-lsp check .` before it cached.
    if revision is None or git_revisions.is_working_tree(root, revision):
        yield root
    else:
        with git_revisions.checkout(root, revision) as folder:
            yield folder


def run(arguments: argparse.Namespace, modes: tuple[str, ...] | None,
        engine: Engine | Pipeline | None) -> tuple[list[graph_diff.ClassChange], list[str]]:
    """The changes, and a line per revision saying how many files were checked and how many
    of them came from the cache."""
    from fxcore.host.engine import Engine

    root = git_revisions.repository_root(os.getcwd())
    changed = git_revisions.changed_python_files(root, arguments.base, arguments.head)
    if not changed:
        return [], []
    # No progress bar with -v (its lines would break it) or -q, as ``check``.
    progress = not (arguments.quiet or arguments.verbose)
    runs_on = engine or Engine(workers=arguments.workers)
    sides, lines = [], []
    try:
        for name, revision in (("BASE", arguments.base), ("HEAD", arguments.head)):
            with _revision(root, revision) as folder:
                found, check_run = _checked(folder, changed, arguments, modes, runs_on,
                                            progress)
            sides.append(found)
            if check_run is not None:
                summary = check_run.summary
                lines.append(f"{name} ({revision or 'the working tree'}): {summary.files} "
                             f"files checked, {summary.cached} from the cache")
    finally:
        if engine is None:
            runs_on.close()
    return graph_diff.diff(sides[0], sides[1]), lines


def write(changes: list[graph_diff.ClassChange], arguments: argparse.Namespace,
          stream: TextIO) -> None:
    from fx_lsp.cli import graph_diff_formats

    if arguments.output_format == "json":
        json.dump({"base": arguments.base, "head": arguments.head,
                   "changes": [graph_diff.change_json(change) for change in changes],
                   "regressions": sum(change.regressed for change in changes)},
                  stream, indent=2)
        stream.write("\n")
    elif arguments.output_format == "markdown":
        stream.write(graph_diff_formats.markdown(changes, arguments.base, arguments.head))
    else:
        graph_diff_formats.table(changes, stream)


def print_lines(lines: list[str], quiet: bool) -> None:
    if not quiet:
        for line in lines:
            print(terminal(line), file=sys.stderr)
