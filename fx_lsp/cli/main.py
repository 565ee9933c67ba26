"""``fx-lsp check PATH...`` for terminals and CI, ``fx-lsp serve`` for editors, ``fx-lsp mcp``
for agents, ``fx-lsp explain``, ``merge``, ``graph`` and ``diff``: argument parsing, then
the engine's API (``fxcore.api``), and ``fx_lsp.cli.output_formats`` to print what it returns."""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from types import FrameType
from typing import TYPE_CHECKING, TextIO

from fx_lsp.cli import graph_diff_command, output_formats, shards
from fx_lsp.cli.arguments import build_parser
from fx_lsp.cli.explain_command import explain_command
from fx_lsp.cli.mcp_command import mcp_command
from fx_lsp.cli.progress import Progress
from fx_lsp.cli.serve_command import serve_command
from fx_lsp.escaping import terminal, terminal_lines
from fx_lsp.interruption import interrupted
from fxcore.api.workers import WORKER_LOG, ZygoteError, installed_torch_support
from fxcore.workspace.config import MAX_TIMEOUT_SECONDS, is_valid_timeout
from fxcore.workspace.file_access import UnsafeWrite, check_output_path, write_output_text

if TYPE_CHECKING:
    from fxcore.api.check import CheckRun
    from fxcore.api.session import ChosenModes, EngineSession

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
#: 128 + the signal's number, as shells report a command that a signal stopped.
EXIT_TERMINATED = 128 + signal.SIGTERM
#: 128 + SIGPIPE's number, as shells report a command whose reader went away (``| head``).
EXIT_CLOSED_PIPE = 128 + signal.SIGPIPE


class CommandError(Exception):
    """What the command was given cannot be used (a report it cannot write, for instance):
    one line on stderr and exit status 2."""


class Terminated(BaseException):
    """SIGTERM arrived: like Ctrl+C, it stops the run, which cleans up on the way out."""


def _check_output_file(path: str | None) -> None:
    """Refuse an output file that cannot be written before the run (which can take minutes)
    rather than after it."""
    if path is None:
        return
    if os.path.isdir(path) and not os.path.islink(path):
        raise CommandError(f"cannot write {path}: it is a folder; give a file name")
    if not os.path.isdir(folder := os.path.dirname(path) or "."):
        raise CommandError(f"cannot write {path}: there is no folder {folder}")
    try:
        check_output_path(path)
    except UnsafeWrite as error:
        raise CommandError(f"cannot write {error}") from error


def _write_output(path: str | None, write: Callable[[TextIO], None]) -> None:
    """What ``write`` prints, to ``path`` or else to standard output."""
    if path is None:
        write(sys.stdout)
        return
    # Written whole once made: an OSError below is the file's, not one from making the report.
    text = io.StringIO()
    write(text)
    try:
        write_output_text(path, text.getvalue())
    except UnsafeWrite as error:
        raise CommandError(f"cannot write {error}") from error
    except OSError as error:
        raise CommandError(f"cannot write {path}: {error.strerror or error}") from error


def _torch_supported() -> bool:
    """Before any worker starts: False, after one line on stderr, for a torch fx-lsp does not
    support; a newer one than tested gets one line saying so, and runs."""
    support = installed_torch_support()
    if support.refusal is not None:
        print(support.refusal, file=sys.stderr)
        return False
    if support.untested is not None:
        print(support.untested, file=sys.stderr)
    return True


def _check_timeout(parser: argparse.ArgumentParser, timeout: float | None) -> None:
    if timeout is not None and not is_valid_timeout(timeout):
        parser.error(f"--timeout must be a number of seconds between 0 and "
                     f"{MAX_TIMEOUT_SECONDS:g}, not {timeout:g}")


def _modes(option: str | None) -> ChosenModes | None:
    """``--mode fx,export`` as capture mode names; an unknown one stops the command, one this
    machine cannot run is left out with a line on stderr."""
    from fxcore.api.session import ModeError, choose_modes

    if option is None:
        return None
    try:
        chosen = choose_modes([mode.strip() for mode in option.split(",") if mode.strip()])
    except ModeError as error:
        raise CommandError(f"--mode {option}: {error}") from error
    assert chosen is not None
    sys.stderr.writelines(f"fx-lsp: --mode {option}: {line}\n" for line in chosen.left_out)
    return chosen


@contextlib.contextmanager
def _session(given: EngineSession | None, workers: int | None) -> Iterator[EngineSession]:
    """``given`` (a caller's, left open), else a session of the command's own, closed after."""
    from fxcore.api.session import EngineSession

    if given is not None:
        yield given
        return
    with EngineSession(workers) as session:
        yield session


def _graph(parser: argparse.ArgumentParser, arguments: argparse.Namespace,
           session: EngineSession | None) -> int:
    from fx_lsp.cli import graph_html
    from fxcore.api.graph import GraphTargetError

    path, class_name = graph_html.split_target(arguments.target)
    if not os.path.isfile(path) or not path.endswith((".py", ".ipynb")):
        parser.error(f"{arguments.target}: give a Python file or a notebook, as PATH::CLASS")
    _check_timeout(parser, arguments.timeout)
    _check_output_file(arguments.output_file)
    modes = _modes(arguments.mode)
    if modes is not None and len(modes.modes) > 1:
        raise CommandError(f"--mode {arguments.mode}: the graph is drawn for one mode")
    if not _torch_supported():
        return EXIT_USAGE
    try:
        with _session(session, 1) as engine_session:
            module = engine_session.graph(path, class_name, modes, arguments.timeout,
                                          not arguments.no_cache,
                                          Progress(_shows_progress(arguments)))
    except GraphTargetError as error:
        print(f"fx-lsp graph: {terminal(path)}: {terminal(str(error))}", file=sys.stderr)
        return EXIT_FAILED
    output = arguments.output_file or f"{module.class_name}.graph.html"
    _write_output(output, lambda stream: stream.write(graph_html.page(module)))
    if not arguments.quiet:
        print(f"{terminal(output)}: {terminal(module.qualified_name)}, {module.status}, "
              f"{len(module.graph)} nodes", file=sys.stderr)
    return EXIT_OK


def _merge(parser: argparse.ArgumentParser, arguments: argparse.Namespace) -> int:
    _check_output_file(arguments.output_file)
    merged, failed = shards.merge(arguments.reports, arguments.output_format)
    _write_output(arguments.output_file, lambda stream: stream.write(shards.dumps(merged)))
    return EXIT_FAILED if failed and not arguments.exit_zero else EXIT_OK


def _check(parser: argparse.ArgumentParser, arguments: argparse.Namespace,
           session: EngineSession | None) -> int:
    from fx_lsp.cli import baselines, fixing
    from fx_lsp.fix_texts import write_diff
    from fxcore.api.session import EngineSession
    from fxcore.api.shards import MAX_SHARDS, parse_shard

    missing = [path for path in arguments.paths if not os.path.exists(path)]
    if missing:
        parser.error(f"no such file or folder: {', '.join(missing)}")
    if arguments.workers is not None and arguments.workers < 1:
        parser.error("--workers must be at least 1")
    if arguments.baseline is not None and not arguments.write_baseline \
            and not os.path.exists(arguments.baseline):
        parser.error(f"no such baseline: {arguments.baseline} (--write-baseline writes it)")
    if arguments.add_noqa and (arguments.write_baseline or arguments.diff):
        parser.error("--add-noqa silences what is reported: not with --write-baseline or "
                     "--diff")
    _check_timeout(parser, arguments.timeout)
    _check_output_file(arguments.output_file)
    if not arguments.diff:  # which prints fixes, not problems: no baseline is read
        where = EngineSession.baseline(arguments.paths, arguments.baseline,
                                       arguments.write_baseline)
    modes = _modes(arguments.mode)
    shard = None
    if arguments.shard is not None:
        shard = parse_shard(arguments.shard)
        if shard is None:
            parser.error(f"--shard takes I/N with 1 <= I <= N <= {MAX_SHARDS}, "
                         f"not {arguments.shard}")
    output_format = arguments.output_format or (
        "full" if arguments.output_file is None and sys.stdout.isatty() else "concise")
    output_format = "concise" if output_format == "text" else output_format
    if not _torch_supported():
        return EXIT_USAGE

    summaries = io.StringIO() if arguments.quiet else sys.stderr
    with _session(session, arguments.workers) as engine_session:

        def run() -> CheckRun:
            return engine_session.check(arguments.paths, modes, arguments.timeout,
                                        not arguments.no_cache,
                                        Progress(_shows_progress(arguments)), shard)

        check_run = run()
        if arguments.diff:
            edits = fixing.planned_edits(check_run.report.problems, arguments.unsafe_fixes,
                                         sys.stderr)
            write_diff(edits, sys.stdout)
            fixing.print_summary(edits, summaries, applied=False)
            return EXIT_FAILED if edits.files else EXIT_OK
        if arguments.fix:
            check_run = fixing.fix_until_done(check_run, run, arguments.unsafe_fixes, summaries)
    baselines.say(EngineSession.apply_baseline(check_run, where, arguments.write_baseline),
                  arguments.show_fixed_baseline, summaries)
    report = check_run.shown(arguments.show_not_traced)
    if arguments.add_noqa:  # for what is left to report: a baselined problem needs none
        from fx_lsp.cli.add_noqa import add_noqa_comments
        add_noqa_comments(report, summaries)
        return EXIT_OK

    def write(stream: TextIO) -> None:
        if arguments.statistics:
            from fx_lsp.cli.output_formats.statistics import statistics
            statistics(report, stream)
        else:
            output_formats.write(report, output_format, stream, check_run.shard)

    _write_output(arguments.output_file, write)
    return EXIT_FAILED if report.failed and not arguments.exit_zero else EXIT_OK


def _diff(parser: argparse.ArgumentParser, arguments: argparse.Namespace,
          session: EngineSession | None) -> int:
    from fxcore.api.git_revisions import GitError

    if arguments.workers is not None and arguments.workers < 1:
        parser.error("--workers must be at least 1")
    _check_timeout(parser, arguments.timeout)
    _check_output_file(arguments.output_file)
    modes = _modes(arguments.mode)
    if not _torch_supported():
        return EXIT_USAGE
    try:
        with _session(session, arguments.workers) as engine_session:
            diff = graph_diff_command.run(arguments, modes, engine_session)
    except GitError as error:
        raise CommandError(str(error)) from error
    graph_diff_command.print_checked(diff.checked, arguments.quiet)
    _write_output(arguments.output_file,
                  lambda stream: graph_diff_command.write(diff, arguments, stream))
    return EXIT_FAILED if diff.regressed and arguments.fail_on == "regression" else EXIT_OK


def _shows_progress(arguments: argparse.Namespace) -> bool:
    """The progress bar, unless ``-v`` (its lines would break the bar) or ``-q``."""
    return not (arguments.verbose or arguments.quiet)


class _TerminalFormatter(logging.Formatter):
    """Each line of a record made inert for the terminal, as other workspace text is: what a
    model prints may hold escape sequences."""

    def format(self, record: logging.LogRecord) -> str:
        return "\n".join(terminal_lines(super().format(record)))


@contextlib.contextmanager
def _logging_for(arguments: argparse.Namespace) -> Iterator[None]:
    """``-v``: fx-lsp's INFO records and all the workers' output (``WORKER_LOG``) on stderr;
    ``-q``: errors only. By default fx-lsp's own warnings, and nothing the workers print.
    Undone at the end, for a caller that runs several commands in one process."""
    root = logging.getLogger()
    levels = root.level, WORKER_LOG.level
    handler: logging.Handler | None = None
    if getattr(arguments, "verbose", False):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_TerminalFormatter("%(message)s"))
        root.addHandler(handler)
        root.setLevel(logging.INFO)
        WORKER_LOG.setLevel(logging.DEBUG)
    elif getattr(arguments, "quiet", False):
        root.setLevel(logging.ERROR)
    try:
        yield
    finally:
        if handler is not None:
            root.removeHandler(handler)
        root.setLevel(levels[0])
        WORKER_LOG.setLevel(levels[1])


@contextlib.contextmanager
def _signals_stop_the_run() -> Iterator[None]:
    """Ctrl+C (SIGINT) raises KeyboardInterrupt and SIGTERM ``Terminated``, so that the run
    stops the way an error stops it: workers killed, the zygote stopped, no cache entry for
    what did not finish. After the first, both are ignored: a second Ctrl+C would break off
    that clean-up (which takes a few seconds at most) and print a traceback. A signal that
    was ignored when fx-lsp started (a background job of a shell) stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.getsignal(number) for number in (signal.SIGINT, signal.SIGTERM)}
    stopped = False

    def stop(number: int, _frame: FrameType | None) -> None:
        nonlocal stopped
        stopped = True
        for each in previous:
            signal.signal(each, signal.SIG_IGN)
        raise KeyboardInterrupt() if number == signal.SIGINT else Terminated()

    for number, handler in previous.items():
        if handler is not signal.SIG_IGN:
            signal.signal(number, stop)
    try:
        yield
    finally:
        if not stopped:  # else the process is about to exit, and stays deaf to the signals
            for number, handler in previous.items():
                signal.signal(number, handler)


def _check_errors() -> tuple[type[Exception], ...]:
    """``fxcore.api.check.UnreadableConfig``, ``fxcore.api.baselines.BaselineProblem`` and
    ``fxcore.workspace.kept_bytes.UnwritableFiles`` (a fix or a comment that could not be
    written), looked up only once an error is on its way: the modules import the engine,
    which ``merge``, ``explain`` and ``serve`` do not need."""
    from fxcore.api.baselines import BaselineProblem
    from fxcore.api.check import UnreadableConfig
    from fxcore.workspace.kept_bytes import UnwritableFiles

    return UnreadableConfig, BaselineProblem, UnwritableFiles


def main(argv: Sequence[str] | None = None, session: EngineSession | None = None) -> int:
    """Run the command line ``argv``; ``check``, ``graph`` and ``diff`` trace on ``session`` if
    given (a caller's, with its warm engine, which they leave open), else on their own."""
    parser = build_parser()
    arguments = parser.parse_args(argv)
    command: dict[str, Callable[[argparse.ArgumentParser, argparse.Namespace], int]] = {
        "serve": serve_command, "mcp": mcp_command, "explain": explain_command, "merge": _merge,
        "check": lambda parser, arguments: _check(parser, arguments, session),
        "graph": lambda parser, arguments: _graph(parser, arguments, session),
        "diff": lambda parser, arguments: _diff(parser, arguments, session)}
    # The server stops on its client's word; SIGTERM kills it, and its zygote then kills the
    # workers when the server's end of their socket closes.
    stops = _signals_stop_the_run() if arguments.command in ("check", "graph", "diff") \
        else contextlib.nullcontext()
    try:
        with _logging_for(arguments), stops:
            return command[arguments.command](parser, arguments)
    except KeyboardInterrupt:
        # The run cleaned up on its way here.
        return interrupted()
    except Terminated:
        print("fx-lsp: terminated", file=sys.stderr)
        return EXIT_TERMINATED
    except BrokenPipeError:
        # Standard output's reader went away (``fx-lsp explain --all | head``): stop quietly,
        # as a command SIGPIPE stops, with what is left to print sent nowhere, so that the
        # flush at exit raises nothing either.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_CLOSED_PIPE
    except ZygoteError as error:
        hint = "" if arguments.verbose else " (--verbose shows what the workers printed)"
        print(f"fx-lsp {arguments.command}: {terminal(str(error))}{hint}", file=sys.stderr)
        return EXIT_USAGE
    except (CommandError, shards.MergeError, *_check_errors()) as error:
        # One line, controls shown (a message may quote a file's text or name); no usage: the
        # arguments were fine.
        print(f"fx-lsp {arguments.command}: {terminal(' '.join(str(error).splitlines()))}",
              file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
