"""The command line's arguments: ``build_parser`` for every command (check, serve, explain,
merge, graph, diff), its options as ruff spells them, ``--version``."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from fx_lsp.cli import graph_diff_command, output_formats
from fxcore.api.workers import network_isolation
from fxcore.model.version import VERSION
from fxcore.reporting.baseline import BASELINE_NAME


class _VersionAction(argparse.Action):
    """``--version``: the version, then which network isolation workers get on this machine
    (probed only when asked, since the probe starts a throwaway process)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS,
                 help: str | None = None) -> None:
        super().__init__(option_strings, dest, default=argparse.SUPPRESS, nargs=0, help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> None:
        print(f"fx-lsp {VERSION}\nnetwork isolation: {network_isolation.describe()}")
        parser.exit()




def _verbosity_options() -> argparse.ArgumentParser:
    """``-v``/``-q``, as ruff spells them, for the commands that run workers."""
    options = argparse.ArgumentParser(add_help=False)
    verbosity = options.add_mutually_exclusive_group()
    verbosity.add_argument("-v", "--verbose", action="store_true",
                           help="also print what the workers print (warnings of torch and "
                           "other libraries, your models' prints and warnings), without the "
                           "progress bar")
    verbosity.add_argument("-q", "--quiet", action="store_true",
                           help="print the report only: no progress bar, no summary of fixes, "
                           "no warnings of fx-lsp's own")
    return options



def build_parser() -> argparse.ArgumentParser:
    verbosity = _verbosity_options()
    parser = argparse.ArgumentParser(
        prog="fx-lsp",
        description="Find what stops torch.fx symbolic tracing of your nn.Modules.",
    )
    parser.add_argument("--version", action=_VersionAction,
                        help="show the version and the network isolation of workers, and exit")
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check", help="trace the nn.Modules of files or folders",
                                parents=[verbosity])
    check.add_argument("paths", nargs="+", metavar="PATH",
                       help="files and folders to check (a folder: its .py files and notebooks)")
    check.add_argument(
        "--output-format", "--format", dest="output_format",
        choices=[*output_formats.FORMATS, "text"], default=None,
        help="full (source lines and fixes; the default on a terminal), concise (one line "
        "per problem; the default otherwise; 'text' is an alias), json, github (workflow "
        "annotations), sarif (SARIF 2.1.0) or junit",
    )
    check.add_argument("--output-file", metavar="PATH", default=None,
                       help="write the report to this file instead of standard output")
    check.add_argument("--show-not-traced", action=argparse.BooleanOptionalAction,
                       default=None,
                       help="full format: list each class that was not traced, and why, "
                       "instead of counting them (default: show-not-traced of [tool.fx-lsp])")
    check.add_argument("--statistics", action="store_true",
                       help="print the number of problems per code instead of the problems")
    check.add_argument("--exit-zero", action="store_true",
                       help="exit with status 0 even when problems are reported")
    check.add_argument("--fix", action="store_true",
                       help="apply the safe fixes the editor offers, trace the changed files "
                       "again and report what remains")
    check.add_argument("--diff", action="store_true",
                       help="print the fixes --fix would apply as a diff instead of writing "
                       "them (exit status 1 when there are any)")
    check.add_argument("--unsafe-fixes", action="store_true",
                       help="also apply fixes that can change what the code or the graph "
                       "means (len(x) -> x.size(0), concrete-args, concrete-none, assert -> "
                       "torch._assert_async, dynamic bounds, print only outside "
                       "torch.compile)")
    check.add_argument("--add-noqa", action="store_true",
                       help="add a `# noqa: CODE` comment at the line of each problem (merged "
                       "with one already there) and list those that cannot have one")
    check.add_argument("--write-baseline", action="store_true",
                       help="record every problem of this run in the baseline file (--baseline, "
                       f"else {BASELINE_NAME} at the workspace root), so that later runs "
                       "report only new ones")
    check.add_argument("--baseline", metavar="PATH", default=None,
                       help="report only the problems not in this baseline file (default: "
                       f"{BASELINE_NAME} at the workspace root, when there is one)")
    check.add_argument("--show-fixed-baseline", action="store_true",
                       help="list on standard error the baselined problems that are gone, so "
                       "that the baseline can be rewritten smaller")
    check.add_argument("--shard", metavar="I/N", default=None,
                       help="check only the I-th of N parts of the files (1 <= I <= N), split "
                       "the same way on every machine; combine the reports with fx-lsp merge")
    check.add_argument("--workers", type=int, default=None, metavar="N",
                       help="worker processes (default: all cores)")
    check.add_argument(
        "--timeout",
        type=float,
        metavar="S",
        default=None,
        help="seconds per class before its worker is stopped (default 20)",
    )
    check.add_argument("--no-cache", action="store_true",
                       help="trace everything again instead of reusing results of unchanged "
                       "files from .fx-lsp-cache/")
    check.add_argument(
        "--mode",
        metavar="MODES",
        default=None,
        help="capture modes, comma-separated, each giving its own verdict per class (fx, "
        "export, compile; default: `modes` of [tool.fx-lsp], else fx)",
    )
    graph = commands.add_parser(
        "graph", help="write a class's traced graph as one self-contained HTML file",
        parents=[verbosity])
    graph.add_argument("target", metavar="PATH::CLASS",
                       help="a Python file and the class in it (the class may be left out "
                       "when the file has one traced class)")
    graph.add_argument("-o", "--output-file", metavar="PATH", default=None,
                       help="the HTML file to write (default: CLASS.graph.html)")
    graph.add_argument("--timeout", type=float, default=None, metavar="S",
                       help="seconds per class before its worker is stopped (default 20)")
    graph.add_argument("--no-cache", action="store_true",
                       help="trace again instead of reusing a result from .fx-lsp-cache/")
    graph.add_argument("--mode", metavar="MODE", default=None,
                       help="the capture mode whose graph is drawn (default: the first "
                       "configured, fx)")
    graph_diff_command.add_parser(commands, [verbosity])
    explain = commands.add_parser("explain", help="show the documentation of a code, or "
                                  "list every code (--all)")
    explain.add_argument("code", metavar="CODE", nargs="?", default=None,
                         help="the code to explain, such as FX002")
    explain.add_argument("--all", action="store_true",
                         help="every code: its summary (text), or its whole record (json)")
    explain.add_argument("--output-format", "--format", dest="output_format",
                         choices=["text", "json"], default="text",
                         help="text (the default) or json")
    merge = commands.add_parser(
        "merge", help="combine the json or sarif reports of the shards of one check")
    merge.add_argument("reports", nargs="+", metavar="REPORT",
                       help="the shards' reports, all json or all sarif")
    merge.add_argument("--output-format", "--format", dest="output_format",
                       choices=["json", "sarif"], default=None,
                       help="the reports' format (default: taken from the reports)")
    merge.add_argument("--output-file", metavar="PATH", default=None,
                       help="write the merged report to this file instead of standard output")
    merge.add_argument("--exit-zero", action="store_true",
                       help="exit with status 0 even when problems are reported")
    serve = commands.add_parser("serve", help="run the language server")
    serve.add_argument(
        "--stdio",
        action="store_true",
        help="talk over stdin/stdout (the default; accepted for clients)",
    )
    serve.add_argument(
        "--tcp",
        metavar="HOST:PORT",
        default=None,
        help="listen on a loopback address (127.0.0.1, ::1 or localhost) instead: local only, "
        "since whoever connects can make the server trace, that is run, code",
    )
    mcp = commands.add_parser(
        "mcp", help="serve fx-lsp's checks to coding agents as MCP tools over stdio (needs "
        "the mcp extra: pip install 'fx-lsp[mcp]')")
    mcp.add_argument("--workspace", metavar="DIR", default=".",
                     help="the folder the tools check (default: the current folder); paths "
                     "outside it are refused")
    mcp.add_argument("--untrusted", action="store_true",
                     help="import and run none of the workspace's code: only `explain` answers")
    return parser
