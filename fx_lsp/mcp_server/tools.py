"""What ``fx-lsp mcp``'s tools do, without the MCP SDK: each runs the command line's own code
(``fx_lsp.cli.check``, its JSON report and baselines, ``fx_lsp.cli.fixing``; ``diff``:
``fx_lsp.cli.main``) on one warm engine and
pipeline that the server keeps (its call-site index built once, rescanned each run), with the
workspace's configuration (parsed again only when ``pyproject.toml`` changes,
``fx_lsp.mcp_server.project_configs``) and the shared ``.fx-lsp-cache/``, and returns plain
data. Bad
input raises ``ToolInputError`` with a message an agent can act on.

One tool call traces at a time (``_lock``): the engine runs one run's jobs, and a run's
messages on stderr are captured for its error, which is process-wide.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import json
import os
import tempfile
import threading
from typing import TYPE_CHECKING, Any

from fx_lsp.cli import fixing
from fx_lsp.cli.graph_html import GraphTargetError, find_class
from fx_lsp.cli.main import EXIT_USAGE, main
from fx_lsp.mcp_server.project_configs import ProjectConfigs
from fxcore.checking.pipeline import Pipeline
from fxcore.host.cache import ResultCache
from fxcore.host.engine import Engine
from fxcore.host.torch_versions import installed_torch_support
from fxcore.host.zygote_host import ZygoteError
from fxcore.model.capture_modes import modes_problem, ordered_modes
from fxcore.rules.documentation import documentation
from fxcore.workspace.notebook.cells import is_notebook

if TYPE_CHECKING:
    from fx_lsp.cli.check import CheckRun

UNTRUSTED = ("the workspace is not trusted: fx-lsp imports and runs none of its code (the "
             "server was started with --untrusted); only `explain` answers")


class ToolInputError(Exception):
    """The tool's input cannot be used: the message says why and what would do."""


@functools.cache
def _torch_refusal() -> str | None:
    """Why fx-lsp cannot check with the installed torch, if it cannot: read once (the
    workers' torch is imported once, by the zygote)."""
    return installed_torch_support().refusal


class Tools:
    def __init__(self, workspace: str, trusted: bool) -> None:
        self.workspace = os.path.realpath(workspace)
        self.trusted = trusted
        self._engine: Engine | None = None
        self._pipeline: Pipeline | None = None
        self._configs = ProjectConfigs()
        self._lock = threading.Lock()

    # -- input ----------------------------------------------------------------------------

    def _path(self, path: str, kind: str = "file or folder") -> str:
        """``path`` (relative to the workspace, or absolute) inside the workspace."""
        full = os.path.realpath(os.path.join(self.workspace, path))
        if os.path.commonpath([full, self.workspace]) != self.workspace:
            raise ToolInputError(f"{path} is outside the workspace {self.workspace}; give a "
                                 "path inside it")
        if not os.path.exists(full):
            raise ToolInputError(f"no such {kind}: {path} (paths are relative to the "
                                 f"workspace {self.workspace})")
        return full

    def _source(self, path: str) -> str:
        full = self._path(path, "file")
        if not os.path.isfile(full) or not full.endswith((".py", ".ipynb")):
            raise ToolInputError(f"{path} is not a Python file or a notebook")
        return full

    @staticmethod
    def _modes(modes: list[str] | None) -> list[str]:
        if not modes:
            return []
        problem = modes_problem(modes)
        if problem is not None:
            raise ToolInputError(problem)
        return ["--mode", ",".join(ordered_modes(modes))]

    def _trusted(self) -> None:
        if not self.trusted:
            raise ToolInputError(UNTRUSTED)

    # -- running the command line ---------------------------------------------------------

    def engine(self) -> Engine:
        """The warm engine every tool call traces on (its zygote started once)."""
        if self._engine is None:
            self._engine = Engine()
            threading.Thread(target=self._engine.warm_up, daemon=True).start()
        return self._engine

    def pipeline(self) -> Pipeline:
        """The warm engine's pipeline, with the command line's cache: kept between calls, so
        that a workspace's call-site index is built once (``run_jobs`` rescans it)."""
        if self._pipeline is None:
            self._pipeline = Pipeline(self.engine(), ResultCache())
        return self._pipeline

    def _command(self, argv: list[str], runner: Engine | Pipeline) -> Any:
        """``fx-lsp ARGV --output-format json`` on ``runner``: its JSON output; a usage error
        (exit status 2) raised with what the command said."""
        self._trusted()
        with tempfile.TemporaryDirectory() as folder, self._lock:
            output = os.path.join(folder, "report.json")
            said = io.StringIO()
            with contextlib.redirect_stderr(said):
                try:
                    status = main([*argv, "--output-format", "json", "--output-file", output,
                                   "--quiet"], runner)
                except SystemExit as stop:  # argparse's usage errors
                    status = stop.code if isinstance(stop.code, int) else EXIT_USAGE
            if status == EXIT_USAGE or not os.path.exists(output):
                raise ToolInputError(" ".join(said.getvalue().split()) or
                                     f"fx-lsp {argv[0]} failed (exit status {status})")
            with open(output, encoding="utf-8") as stream:
                return json.load(stream)

    def _checked(self, paths: list[str], modes: list[str] | None) -> CheckRun:
        """``fx_lsp.cli.check``'s run of files and folders on the warm pipeline, with what
        ``fx-lsp check`` refuses to run on (a torch it does not support, a configuration it
        cannot read, workers that do not start) raised as its one line."""
        from fx_lsp.cli.baselines import BaselineProblem
        from fx_lsp.cli.check import UnreadableConfig, check_jobs, run_jobs

        self._trusted()
        self._modes(modes)  # an unknown mode is the caller's error
        refusal = _torch_refusal()
        if refusal is not None:
            raise ToolInputError(refusal)
        chosen = tuple(ordered_modes(modes)) if modes else None
        # A run's messages on stderr (a configuration's problems) are the command line's;
        # the report says what an agent needs.
        with self._lock, contextlib.redirect_stderr(io.StringIO()):
            try:
                jobs, projects = check_jobs(paths, None, chosen, self._configs)
                return run_jobs(jobs, projects, 1, True, False, self.pipeline())
            except (UnreadableConfig, BaselineProblem, ZygoteError) as error:
                raise ToolInputError(f"fx-lsp check: {' '.join(str(error).split())}") from error

    # -- the tools --------------------------------------------------------------------------

    def check(self, paths: list[str] | None, modes: list[str] | None) -> dict[str, Any]:
        """``fx-lsp check PATHS --output-format json``'s report, made from the run in this
        process: no command line parsed, no report written to a file and read back (what
        kept a warm check slower than the editor's save)."""
        from fx_lsp.cli.baselines import BaselineProblem, subtract
        from fx_lsp.cli.output_formats.json_report import json_report

        full = [self._path(path) for path in paths or ["."]]
        run = self._checked(full, modes)
        try:  # the workspace's baseline, as the command line applies it
            subtract(run.report, run.results, full, False, None, False, io.StringIO())
        except BaselineProblem as error:
            raise ToolInputError(f"fx-lsp check: {' '.join(str(error).split())}") from error
        return json_report(run.shown())

    @staticmethod
    def explain(code: str) -> dict[str, str]:
        doc = documentation().get(code.strip().upper())
        if doc is None:
            raise ToolInputError(f"unknown code {code!r}; the codes are "
                                 f"{', '.join(documentation())}")
        return {"code": doc.code, "documentation": doc.text}

    def graph(self, path: str, class_name: str, mode: str | None) -> dict[str, Any]:
        full = self._source(path)
        run = self._checked([full], [mode] if mode else None)
        errors = [e.message for result in run.results for e in result.errors]
        try:
            module = find_class(run.results, class_name)
        except GraphTargetError as error:
            raise ToolInputError(f"{path}: {error}" + (
                f" ({errors[0]})" if errors and str(errors[0]) not in str(error) else "")
            ) from error
        return {"class": module.class_name, "qualified_name": module.qualified_name,
                "status": module.status, "generated_code": module.generated_code,
                "nodes": [dataclasses.asdict(node) for node in module.graph]}

    def fix(self, path: str, code: str | None, line: int | None, apply: bool,
            unsafe: bool) -> dict[str, Any]:
        if code is None and line is None:
            raise ToolInputError("give the code of the problem to fix, its line, or both")
        full = self._source(path)
        run = self._checked([full], None)
        problems = [problem for problem in run.report.problems if problem.path == full]
        chosen = [problem for problem in problems
                  if (code is None or problem.code == code.strip().upper())
                  and (line is None or problem.line == line)]
        if not chosen:
            found = ", ".join(f"{p.code} at line {p.line}" for p in problems) or "none"
            raise ToolInputError(f"no such problem in {path}; its problems: {found}")
        said = io.StringIO()
        edits = fixing.notebook_edits(fixing.plan_edits(chosen, unsafe), said)
        diff = io.StringIO()
        fixing.print_diff(edits, diff)
        if apply and edits.files:
            fixing.write_edits(edits)
        return {"diff": diff.getvalue(), "applied": apply and bool(edits.files),
                "fixed": [{"code": problem.code, "line": problem.line, "title": title}
                          for problem, title in edits.fixed],
                "not_fixed": [*said.getvalue().splitlines(),
                              *[f"{p.code} at line {p.line}: no fix"
                                for p in chosen if p not in [f for f, _ in edits.fixed]]],
                "notebook": is_notebook(full)}

    def diff(self, base: str, head: str | None, modes: list[str] | None) -> dict[str, Any]:
        # The engine alone: the revisions are checked in temporary folders, whose call-site
        # indexes the kept pipeline would keep after they are gone.
        return self._command(["diff", base, *([head] if head else []), *self._modes(modes)],
                             self.engine())

    def close(self) -> None:
        """Kill the workers, and wait for a call still tracing to end (its jobs stop with
        them), so that nothing runs on while the process exits."""
        engine, self._engine = self._engine, None
        pipeline, self._pipeline = self._pipeline, None
        if engine is not None:
            engine.close()
        if pipeline is not None:
            pipeline.close()
        if self._lock.acquire(timeout=30):
            self._lock.release()
