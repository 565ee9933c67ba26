"""``fx-lsp diff BASE [HEAD]``: what a change did to the graphs (``fxcore.api.revision_diff``:
the classes of the Python files that differ between two git revisions, and of the files
importing them, checked at both), each class's changes per capture mode printed."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, TextIO

from fx_lsp.cli.progress import Progress
from fx_lsp.escaping import terminal

if TYPE_CHECKING:
    from fxcore.api.revision_diff import RevisionDiff, SideChecked
    from fxcore.api.session import ChosenModes, EngineSession

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
    diff.add_argument("--output-file", metavar="PATH", default=None,
                      help="write the report to this file instead of standard output")
    diff.add_argument("--fail-on", choices=["regression"], default=None,
                      help="exit with status 1 when a class got worse in a mode (failed, "
                      "graph breaks or problems it did not have, no longer checkable)")
    diff.add_argument("--mode", metavar="MODES", default=None,
                      help="capture modes, comma-separated (default: `modes` of each "
                      "revision's [tool.fx-lsp], else fx)")
    diff.add_argument("--timeout", type=float, default=None, metavar="S",
                      help="seconds per class before its worker is stopped (default 20)")
    diff.add_argument("--workers", type=int, default=None, metavar="N",
                      help="worker processes (default: all cores)")


def run(arguments: argparse.Namespace, modes: ChosenModes | None,
        session: EngineSession) -> RevisionDiff:
    """``session``'s diff of the repository of the current folder, as the arguments ask."""
    # No progress bar with -v (its lines would break it) or -q, as ``check``.
    return session.diff(os.getcwd(), arguments.base, arguments.head, modes, arguments.timeout,
                        Progress(shown=not (arguments.quiet or arguments.verbose)))


def write(diff: RevisionDiff, arguments: argparse.Namespace, stream: TextIO) -> None:
    from fx_lsp.cli import graph_diff_formats

    changes = diff.changes
    if arguments.output_format == "json":
        from fxcore.api.revision_diff import diff_json

        json.dump(diff_json(arguments.base, arguments.head, changes, diff.refused), stream,
                  indent=2)
        stream.write("\n")
    elif arguments.output_format == "markdown":
        stream.write(graph_diff_formats.markdown(changes, arguments.base, arguments.head))
    else:
        graph_diff_formats.table(changes, stream)


def print_checked(checked: list[SideChecked], quiet: bool) -> None:
    """A line per revision saying how many files were checked and how many of them came from
    the cache; and, even with ``quiet``, one per file refused at the workspace boundary."""
    for side in checked:
        if not quiet:
            print(terminal(f"{side.name} ({side.revision or 'the working tree'}): {side.files} "
                           f"files checked, {side.cached} from the cache"), file=sys.stderr)
        for line in side.refused:
            print(terminal(f"{side.name}: {line}"), file=sys.stderr)
