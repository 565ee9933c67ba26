"""``fx-lsp check PATH...`` for terminals and CI, ``fx-lsp serve`` for editors, ``fx-lsp explain``,
``fx-lsp merge`` and ``fx-lsp graph``: argument parsing, then ``fx_lsp.check`` and
``fx_lsp.report_formats``."""

from __future__ import annotations

import argparse
import io
import ipaddress
import os
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from fx_lsp import fixing, graph_html, report_formats, shards
from fx_lsp.check import CheckRun, UnreadableConfig, check_jobs, run_jobs
from fx_lsp.escaping import terminal
from fxcore import network_isolation
from fxcore.capture_modes import modes_problem, ordered_modes
from fxcore.codes import documentation
from fxcore.config import MAX_TIMEOUT_SECONDS, is_valid_timeout
from fxcore.version import VERSION

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


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


class CommandError(Exception):
    """What the command was given cannot be used (a report it cannot write, for instance):
    one line on stderr and exit status 2."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fx-lsp",
        description="Find what stops torch.fx symbolic tracing of your nn.Modules.",
    )
    parser.add_argument("--version", action=_VersionAction,
                        help="show the version and the network isolation of workers, and exit")
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check", help="trace the nn.Modules of files or folders")
    check.add_argument("paths", nargs="+", metavar="PATH")
    check.add_argument(
        "--output-format", "--format", dest="output_format",
        choices=[*report_formats.FORMATS, "text"], default=None,
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
    check.add_argument("--shard", metavar="I/N", default=None,
                       help="check only the I-th of N parts of the files (1 <= I <= N), split "
                       "the same way on every machine; combine the reports with fx-lsp merge")
    check.add_argument(
        "--workers", type=int, default=None, help="worker processes (default: all cores)"
    )
    check.add_argument(
        "--timeout",
        type=float,
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
        "graph", help="write a class's traced graph as one self-contained HTML file")
    graph.add_argument("target", metavar="PATH::CLASS",
                       help="a Python file and the class in it (the class may be left out "
                       "when the file has one traced class)")
    graph.add_argument("-o", "--output-file", metavar="PATH", default=None,
                       help="the HTML file to write (default: CLASS.graph.html)")
    graph.add_argument("--timeout", type=float, default=None,
                       help="seconds per class before its worker is stopped (default 20)")
    graph.add_argument("--no-cache", action="store_true",
                       help="trace again instead of reusing a result from .fx-lsp-cache/")
    graph.add_argument("--mode", metavar="MODE", default=None,
                       help="the capture mode whose graph is drawn (default: the first "
                       "configured, fx)")
    explain = commands.add_parser("explain", help="show the documentation of a code")
    explain.add_argument("code", metavar="CODE", help="such as FX002")
    merge = commands.add_parser(
        "merge", help="combine the json or sarif reports of the shards of one check")
    merge.add_argument("reports", nargs="+", metavar="REPORT")
    merge.add_argument("--output-format", "--format", dest="output_format",
                       choices=["json", "sarif"], default=None,
                       help="the reports' format (default: taken from the reports)")
    merge.add_argument("--output-file", metavar="PATH", default=None)
    merge.add_argument("--exit-zero", action="store_true")
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
    return parser


def _check_output_file(path: str | None) -> None:
    """Refuse an output file that cannot be written before the run (which can take minutes)
    rather than after it."""
    if path is None:
        return
    if os.path.isdir(path):
        raise CommandError(f"cannot write {path}: it is a folder; give a file name")
    folder = os.path.dirname(path) or "."
    if not os.path.isdir(folder):
        raise CommandError(f"cannot write {path}: there is no folder {folder}")


def _write_output(path: str | None, write: Callable[[TextIO], None]) -> None:
    """What ``write`` prints, to ``path`` or else to standard output."""
    if path is None:
        write(sys.stdout)
        return
    # Written whole once made: an OSError below is the file's, not one from making the report.
    text = io.StringIO()
    write(text)
    try:
        with open(path, "w", encoding="utf-8") as stream:
            stream.write(text.getvalue())
    except OSError as error:
        raise CommandError(f"cannot write {path}: {error.strerror or error}") from error


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (no name lookup: ``localhost`` counts,
    other names do not, as they could resolve anywhere)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _serve(parser: argparse.ArgumentParser, arguments: argparse.Namespace) -> int:
    from fx_lsp.server import serve

    tcp = None
    if arguments.tcp:
        host, _, port = arguments.tcp.rpartition(":")
        host = host.removeprefix("[").removesuffix("]")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            parser.error("--tcp takes HOST:PORT")
        if not is_loopback(host):
            parser.error(
                f"--tcp {arguments.tcp}: the server listens on a loopback address only "
                "(127.0.0.1, ::1 or localhost); anyone who can connect can make it run code"
            )
        tcp = (host, int(port))
    serve(tcp=tcp)
    return EXIT_OK


def _explain(parser: argparse.ArgumentParser, arguments: argparse.Namespace) -> int:
    code = arguments.code.upper()
    doc = documentation().get(code)
    if doc is None:
        parser.error(f"unknown code {arguments.code}; the codes are "
                     f"{', '.join(documentation())}")
    from rich.console import Console
    from rich.markdown import Markdown

    Console(highlight=False).print(Markdown(f"# {doc.code}\n\n{doc.text}"))
    return EXIT_OK


def _check_timeout(parser: argparse.ArgumentParser, timeout: float | None) -> None:
    if timeout is not None and not is_valid_timeout(timeout):
        parser.error(f"--timeout must be a number of seconds between 0 and "
                     f"{MAX_TIMEOUT_SECONDS:g}, not {timeout:g}")


def _modes(option: str | None) -> tuple[str, ...] | None:
    """``--mode fx,export`` as capture mode names; an unknown one stops the command."""
    if option is None:
        return None
    modes = [mode.strip() for mode in option.split(",") if mode.strip()]
    problem = modes_problem(modes)
    if problem is not None:
        raise CommandError(f"--mode {option}: {problem}")
    return ordered_modes(modes)


def _graph(parser: argparse.ArgumentParser, arguments: argparse.Namespace) -> int:
    path, class_name = graph_html.split_target(arguments.target)
    if not os.path.isfile(path) or not path.endswith(".py"):
        parser.error(f"{arguments.target}: give a Python file, as PATH::CLASS")
    _check_timeout(parser, arguments.timeout)
    _check_output_file(arguments.output_file)
    modes = _modes(arguments.mode)
    if modes is not None and len(modes) > 1:
        raise CommandError(f"--mode {arguments.mode}: the graph is drawn for one mode")
    jobs, projects = check_jobs([path], arguments.timeout, modes)
    check_run = run_jobs(jobs, projects, 1, not arguments.no_cache)
    try:
        module = graph_html.find_class(check_run, class_name)
    except graph_html.GraphTargetError as error:
        print(f"fx-lsp graph: {terminal(path)}: {terminal(str(error))}", file=sys.stderr)
        return EXIT_FAILED
    output = arguments.output_file or f"{module.class_name}.graph.html"
    _write_output(output, lambda stream: stream.write(graph_html.page(module)))
    print(f"{terminal(output)}: {terminal(module.qualified_name)}, {module.status}, "
          f"{len(module.graph)} nodes", file=sys.stderr)
    return EXIT_OK


def _merge(parser: argparse.ArgumentParser, arguments: argparse.Namespace) -> int:
    _check_output_file(arguments.output_file)
    merged, failed = shards.merge(arguments.reports, arguments.output_format)
    _write_output(arguments.output_file, lambda stream: stream.write(shards.dumps(merged)))
    return EXIT_FAILED if failed and not arguments.exit_zero else EXIT_OK


def _check(parser: argparse.ArgumentParser, arguments: argparse.Namespace) -> int:
    missing = [path for path in arguments.paths if not os.path.exists(path)]
    if missing:
        parser.error(f"no such file or folder: {', '.join(missing)}")
    if arguments.workers is not None and arguments.workers < 1:
        parser.error("--workers must be at least 1")
    _check_timeout(parser, arguments.timeout)
    _check_output_file(arguments.output_file)
    modes = _modes(arguments.mode)
    shard = None
    if arguments.shard is not None:
        shard = shards.parse_shard(arguments.shard)
        if shard is None:
            parser.error(f"--shard takes I/N with 1 <= I <= N <= {shards.MAX_SHARDS}, "
                         f"not {arguments.shard}")
    output_format = arguments.output_format or (
        "full" if arguments.output_file is None and sys.stdout.isatty() else "concise")
    output_format = "concise" if output_format == "text" else output_format

    def run() -> tuple[CheckRun, shards.Shard | None]:
        jobs, projects = check_jobs(arguments.paths, arguments.timeout, modes)
        selected = None
        if shard is not None:
            jobs, selected = shards.select(jobs, *shard)
        return run_jobs(jobs, projects, arguments.workers, not arguments.no_cache), selected

    check_run, selected = run()
    if arguments.diff:
        edits = fixing.notebook_edits(
            fixing.plan_edits(check_run.report.problems, arguments.unsafe_fixes), sys.stderr)
        fixing.print_diff(edits, sys.stdout)
        fixing.print_summary(edits, sys.stderr, applied=False)
        return EXIT_FAILED if edits.files else EXIT_OK
    if arguments.fix:
        check_run, selected = fixing.fix_until_done(check_run, selected, run,
                                                    arguments.unsafe_fixes, sys.stderr)

    def write(stream: TextIO) -> None:
        if arguments.statistics:
            report_formats.statistics(check_run, stream)
        else:
            report_formats.write(check_run, output_format, stream, selected,
                                 arguments.show_not_traced)

    _write_output(arguments.output_file, write)
    return EXIT_FAILED if check_run.failed and not arguments.exit_zero else EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    arguments = parser.parse_args(argv)
    command = {"serve": _serve, "explain": _explain, "merge": _merge, "check": _check,
               "graph": _graph}
    try:
        return command[arguments.command](parser, arguments)
    except (CommandError, shards.MergeError, UnreadableConfig) as error:
        # One line, controls shown (a message may quote a file's text or name); no usage: the
        # arguments were fine.
        print(f"fx-lsp {arguments.command}: {terminal(' '.join(str(error).splitlines()))}",
              file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
