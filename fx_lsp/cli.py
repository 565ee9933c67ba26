"""``fx-lsp check PATH...`` for terminals and CI, and ``fx-lsp serve`` for editors."""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import sys
from collections.abc import Sequence
from concurrent.futures import as_completed
from dataclasses import dataclass, field
from typing import Any, TextIO

from fxcore.cache import ResultCache
from fxcore.config import MAX_TIMEOUT_SECONDS, is_valid_timeout, load_config
from fxcore.engine import Engine
from fxcore.parent_arguments import apply_parent_arguments
from fxcore.results import (
    Arguments,
    EngineConfig,
    Failure,
    FileResult,
    Frame,
    Hint,
    ModuleResult,
)
from fxcore.version import VERSION
from fxcore.workspace import find_workspace_root, python_files, trace_jobs

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def display_path(path: str) -> str:
    """Relative to the current folder when below it, as ruff prints paths."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


@dataclass
class Summary:
    files: int = 0
    traceable: int = 0
    failed: int = 0
    not_traced: int = 0
    file_errors: int = 0
    cached: int = 0
    config_problems: list[str] = field(default_factory=list)

    @property
    def traced(self) -> int:
        return self.traceable + self.failed

    def add(self, result: FileResult) -> None:
        self.files += 1
        self.file_errors += len(result.errors)
        self.cached += result.from_cache
        for module in result.modules:
            if module.status == "traceable":
                self.traceable += 1
            elif module.status == "failed":
                self.failed += 1
            else:
                self.not_traced += 1

    def line(self) -> str:
        return (
            f"Checked {self.files} file{'s' if self.files != 1 else ''}: "
            f"{self.traced} modules traced, {self.traceable} traceable, {self.failed} failed, "
            f"{self.not_traced} not traced"
            + (f", {self.file_errors} files could not be imported" if self.file_errors else "")
            + "."
        )


class Progress:
    """A one-line progress bar on stderr, shown only when stderr is a terminal."""

    def __init__(self, total: int, stream: TextIO = sys.stderr) -> None:
        self.total = total
        self.stream = stream
        self.enabled = total > 1 and stream.isatty()
        self.done = 0

    def advance(self) -> None:
        self.done += 1
        if self.enabled:
            width = 30
            filled = width * self.done // self.total
            self.stream.write(
                f"\r[{'=' * filled}{' ' * (width - filled)}] {self.done}/{self.total} files"
            )
            self.stream.flush()

    def finish(self) -> None:
        if self.enabled:
            self.stream.write("\r" + " " * 60 + "\r")
            self.stream.flush()


def run_checks(paths: Sequence[str], workers: int | None, timeout: float | None,
               use_cache: bool = True) -> tuple[list[FileResult], Summary]:
    """Trace every Python file under ``paths``, each with its own workspace's config,
    taking unchanged files' results from the cache."""
    summary = Summary()
    configs: dict[str, EngineConfig] = {}

    def config_of(root: str) -> EngineConfig:
        if root not in configs:
            config, problems = load_config(root)
            if timeout is not None:
                config.timeout = timeout
            configs[root] = config
            summary.config_problems.extend(problems)
        return configs[root]

    jobs = trace_jobs(python_files(paths), find_workspace_root, config_of)
    progress = Progress(len(jobs))
    results: list[FileResult] = []
    engine = Engine(workers=workers, cache=ResultCache() if use_cache else None)
    try:
        handles = [engine.submit(job) for job in jobs]
        for future in as_completed(handle.future for handle in handles):
            results.append(future.result())
            progress.advance()
    finally:
        progress.finish()
        engine.close()
    results.sort(key=lambda result: result.path)
    results = apply_parent_arguments(results)
    for result in results:
        summary.add(result)
    return results, summary



# -- text output ---------------------------------------------------------------------------


def _location(path: str, line: int, column: int) -> str:
    return f"{display_path(path)}:{line}:{column}"


def text_report(results: list[FileResult], summary: Summary, stream: TextIO) -> None:
    for problem in summary.config_problems:
        stream.write(f"warning: {problem}\n")
    for result in results:
        for error in result.errors:
            stream.write(
                f"{_location(error.path, error.line, error.column)}: {error.code} {error.message}\n"
            )
        for module in result.modules:
            for failure in module.failures:
                stream.write(
                    f"{_location(failure.path, failure.line, failure.column)}: "
                    f"{failure.code} [{module.class_name}] {failure.message}\n"
                )
            for hint in module.hints:
                stream.write(
                    f"{_location(hint.path, hint.line, hint.column)}: {hint.code} "
                    f"[{module.class_name}] {hint.message}\n"
                )
            if module.status == "not-traced":
                stream.write(
                    f"{_location(module.path, module.line, module.column)}: note: "
                    f"{module.class_name} was not traced. {module.reason}\n"
                )
    stream.write(summary.line() + "\n")


# -- JSON output ---------------------------------------------------------------------------


def _frame_json(frame: Frame) -> dict[str, Any]:
    return {
        "path": display_path(frame.path),
        "line": frame.line,
        "column": frame.column,
        "end_line": frame.end_line,
        "end_column": frame.end_column,
        "function": frame.function,
    }


def _failure_json(failure: Failure | Hint) -> dict[str, Any]:
    data: dict[str, Any] = {
        "code": failure.code,
        "kind": failure.kind,
        "message": failure.message,
        "path": display_path(failure.path),
        "line": failure.line,
        "column": failure.column,
        "end_line": failure.end_line,
        "end_column": failure.end_column,
    }
    if isinstance(failure, Failure):
        data["frames"] = [_frame_json(frame) for frame in failure.frames]
        data["possible_consequence"] = failure.possible_consequence
    else:
        data["member"] = failure.member
    return data


def _arguments_json(arguments: Arguments | None) -> dict[str, Any] | None:
    if arguments is None:
        return None
    data: dict[str, Any] = {"from": arguments.origin, "args": arguments.args,
                            "kwargs": arguments.kwargs}
    for key, value in (("parent", arguments.parent), ("path", arguments.path),
                       ("parent_from", arguments.parent_origin), ("site", arguments.site)):
        if value is not None:
            data[key] = value
    return data


def _module_json(module: ModuleResult) -> dict[str, Any]:
    return {
        "path": display_path(module.path),
        "class": module.class_name,
        "qualified_name": module.qualified_name,
        "line": module.line,
        "column": module.column,
        "end_line": module.end_line,
        "end_column": module.end_column,
        "status": module.status,
        "reason": module.reason,
        "node_count": module.node_count,
        "instantiated_on": module.instantiated_on,
        "arguments": _arguments_json(module.arguments),
        "weights": module.weights,
        "trace_seconds": round(module.trace_seconds, 4),
        "failures": [_failure_json(failure) for failure in module.failures],
        "hints": [_failure_json(hint) for hint in module.hints],
    }


def json_report(results: list[FileResult], summary: Summary) -> dict[str, Any]:
    return {
        "modules": [_module_json(module) for result in results for module in result.modules],
        "files": [
            {
                "path": display_path(result.path),
                "errors": [_failure_json(error) for error in result.errors],
                "imported_files": [display_path(path) for path in result.imported_files],
                "seconds": round(result.seconds, 4),
            }
            for result in results
        ],
        "summary": {
            "files": summary.files,
            "traced": summary.traced,
            "traceable": summary.traceable,
            "failed": summary.failed,
            "not_traced": summary.not_traced,
            "file_errors": summary.file_errors,
            "cached": summary.cached,
        },
        "config_problems": summary.config_problems,
    }


# -- entry point ---------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fx-lsp",
        description="Find what stops torch.fx symbolic tracing of your nn.Modules.",
    )
    parser.add_argument("--version", action="version", version=f"fx-lsp {VERSION}")
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("check", help="trace the nn.Modules of files or folders")
    check.add_argument("paths", nargs="+", metavar="PATH")
    check.add_argument("--format", choices=["text", "json"], default="text")
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


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (no name lookup: ``localhost`` counts,
    other names do not, as they could resolve anywhere)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    arguments = parser.parse_args(argv)
    if arguments.command == "serve":
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

    missing = [path for path in arguments.paths if not os.path.exists(path)]
    if missing:
        parser.error(f"no such file or folder: {', '.join(missing)}")
    if arguments.workers is not None and arguments.workers < 1:
        parser.error("--workers must be at least 1")
    if arguments.timeout is not None and not is_valid_timeout(arguments.timeout):
        parser.error(f"--timeout must be a number of seconds between 0 and "
                     f"{MAX_TIMEOUT_SECONDS:g}, not {arguments.timeout:g}")
    results, summary = run_checks(arguments.paths, arguments.workers, arguments.timeout,
                                  use_cache=not arguments.no_cache)
    if arguments.format == "json":
        json.dump(json_report(results, summary), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        text_report(results, summary, sys.stdout)
    failed = summary.failed > 0 or summary.file_errors > 0
    return EXIT_FAILED if failed else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
