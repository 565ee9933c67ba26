"""What ``fx-lsp mcp``'s tools do, without the MCP SDK: each calls the engine's API
(``fxcore.api``: check, explain, graph, fix, diff), as the command line does, on one warm engine
and pipeline that the server keeps (its call-site index built once, rescanned each run), with
the workspace's configuration (parsed again only when ``pyproject.toml`` changes,
``fx_lsp.mcp_server.project_configs``) and the shared ``.fx-lsp-cache/``, and returns the data
it gives: ``check`` the report ``fx-lsp check --output-format json`` prints, ``diff`` that of
``fx-lsp diff --output-format json``. Bad input raises ``ToolInputError`` with a message an
agent can act on.

One tool call traces at a time (``_lock``): the engine runs one run's jobs, and a run's
messages on stderr are captured for its error, which is process-wide. A call the client
cancels stops its trace (``stop``): its workers are killed and its run submits nothing more, so
the next call does not wait for it; a call cancelled before its turn never traces.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import os
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError
from typing import Any

from fx_lsp.fix_texts import refusal_lines, write_diff
from fx_lsp.mcp_server.project_configs import ProjectConfigs
from fxcore.api import baselines, fixes
from fxcore.api.check import CheckRun, UnreadableConfig, check_jobs, run_jobs
from fxcore.api.explain import explain, known_codes
from fxcore.api.git_revisions import GitError
from fxcore.api.graph import GraphTargetError, find_class, graph_json
from fxcore.api.revision_diff import diff_json, diff_revisions
from fxcore.checking.pipeline import Pipeline
from fxcore.host.cache import ResultCache
from fxcore.host.engine import Engine
from fxcore.host.torch_versions import installed_torch_support
from fxcore.host.zygote_host import ZygoteError
from fxcore.model.capture_modes import available_modes, modes_problem, ordered_modes
from fxcore.reporting.json_report import json_report
from fxcore.reporting.mode_phases import LOOP_MODE, LOOP_NAME
from fxcore.workspace.kept_bytes import UnwritableFiles
from fxcore.workspace.notebook.cells import is_notebook

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
        #: The cancellation flag of each call, in the thread that runs it (``call``).
        self._calls = threading.local()
        #: The flag of the call tracing now, guarded by ``_stopping``.
        self._tracing_call: threading.Event | None = None
        self._stopping = threading.Lock()

    # -- input ----------------------------------------------------------------------------

    def _path(self, path: str, kind: str = "file or folder") -> str:
        """``path`` (relative to the workspace, or absolute) inside the workspace."""
        if "\0" in path:
            raise ToolInputError("a path cannot hold a NUL character; give a file or folder "
                                 "of the workspace")
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
    def _modes(modes: list[str] | None) -> tuple[str, ...] | None:
        """The capture modes asked for, in their order; None: the workspace's."""
        if not modes:
            return None
        problem = modes_problem(modes)
        if problem is not None:
            raise ToolInputError(problem)
        return tuple(ordered_modes(modes))

    def _trusted(self) -> None:
        if not self.trusted:
            raise ToolInputError(UNTRUSTED)

    # -- the warm engine --------------------------------------------------------------------

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

    @contextlib.contextmanager
    def _tracing(self, command: str) -> Iterator[None]:
        """One traced call at a time, trusted only, with a torch fx-lsp supports; what
        ``fx-lsp COMMAND`` refuses to run on (a configuration it cannot read, a baseline it
        cannot read, git's refusal, workers that do not start) raised as its one line. A
        run's messages on stderr (a configuration's problems) are the command line's; the
        data returned says what an agent needs."""
        self._trusted()
        refusal = _torch_refusal()
        if refusal is not None:
            raise ToolInputError(refusal)
        with self._lock, contextlib.redirect_stderr(io.StringIO()):
            pipeline = self.pipeline()  # made before the call can be stopped: ``stop`` sees it
            cancelled = getattr(self._calls, "cancelled", None)
            with self._stopping:
                if cancelled is not None and cancelled.is_set():
                    raise CancelledError(f"the {command} call was cancelled")
                self._tracing_call = cancelled
            try:
                yield
            except (UnreadableConfig, baselines.BaselineProblem, GitError,
                    ZygoteError) as error:
                raise ToolInputError(f"fx-lsp {command}: {' '.join(str(error).split())}"
                                     ) from error
            finally:
                with self._stopping:
                    self._tracing_call = None
                    pipeline.resume()
                    pipeline.engine.resume()

    # -- cancelling a call ------------------------------------------------------------------

    def call(self, cancelled: threading.Event, function: Callable[..., Any],
             *args: Any) -> Any:
        """``function(*args)``, in this thread, as the call ``stop(cancelled)`` stops."""
        self._calls.cancelled = cancelled
        try:
            return function(*args)
        finally:
            self._calls.cancelled = None

    def stop(self, cancelled: threading.Event) -> None:
        """The client cancelled the call of ``cancelled``: if it is tracing, its jobs are
        cancelled, their workers killed, and its run submits no more (``interrupt``) until it
        has ended; if it waits for its turn, it will not trace."""
        with self._stopping:
            cancelled.set()
            if self._tracing_call is not cancelled or self._pipeline is None:
                return
            self._pipeline.interrupt()
            self._pipeline.engine.interrupt()

    def _run(self, paths: list[str], modes: list[str] | None,
             loop_of_calls: bool = True) -> CheckRun:
        """The engine's check of files and folders on the warm pipeline, within
        ``_tracing``; an unknown mode is the caller's error. Without ``loop_of_calls``,
        compile mode's single call alone (an editor's single-call stage)."""
        jobs, projects = check_jobs(paths, None, self._modes(modes), self._configs)
        if not loop_of_calls:
            jobs = [dataclasses.replace(job, loop_of_calls=False) for job in jobs]
        return run_jobs(jobs, projects, 1, True, None, self.pipeline())

    def _checked(self, paths: list[str], modes: list[str] | None) -> CheckRun:
        with self._tracing("check"):
            return self._run(paths, modes)

    # -- the tools --------------------------------------------------------------------------

    def check(self, paths: list[str] | None, modes: list[str] | None,
              loop_of_calls: bool = True) -> dict[str, Any]:
        """The report of ``fx-lsp check PATHS --output-format json``, the workspace's
        baseline taken out as the command line takes it. Without ``loop_of_calls``, where
        compile mode ran, the report's ``pending`` names the stage it lacks (as an editor's
        pull does): ``compile-loop``, its recompilation findings."""
        full = [self._path(path) for path in paths or ["."]]
        where = baselines.locate(full, None)
        with self._tracing("check"):
            entries = baselines.read(where)  # before the trace: it stops the call at once
            run = self._run(full, modes, loop_of_calls)
            if entries is not None:
                baselines.apply(run.report, run.results, where, entries)
        report = json_report(run.shown())
        if not loop_of_calls and any(module.mode == LOOP_MODE for result in run.results
                                     for module in result.modules):
            report["pending"] = [LOOP_NAME]
        return report

    @staticmethod
    def explain(code: str) -> dict[str, str]:
        doc = explain(code)
        if doc is None:
            raise ToolInputError(f"unknown code {code!r}; the codes are "
                                 f"{', '.join(known_codes())}")
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
        return graph_json(module)

    def fix(self, path: str, code: str | None, line: int | None, apply: bool,
            unsafe: bool) -> dict[str, Any]:
        if code is None and line is None:
            raise ToolInputError("give the code of the problem to fix, its line, or both")
        full = self._source(path)
        run = self._checked([full], None)
        problems = [problem for problem in run.report.problems if problem.path == full]
        chosen = fixes.select_problems(problems, code, line)
        if not chosen:
            found = ", ".join(f"{p.code} at line {p.line}" for p in problems) or "none"
            raise ToolInputError(f"no such problem in {path}; its problems: {found}")
        plan = fixes.plan_fixes(chosen, unsafe)
        diff = io.StringIO()
        write_diff(plan.edits, diff)
        if apply and plan.edits.files:
            try:
                fixes.write_edits(plan.edits)
            except UnwritableFiles as error:
                raise ToolInputError(str(error)) from error
        return {"diff": diff.getvalue(), "applied": apply and bool(plan.edits.files),
                "fixed": [{"code": problem.code, "line": problem.line, "title": title}
                          for problem, title in plan.edits.fixed],
                "not_fixed": [*(line.rstrip("\n") for line in refusal_lines(plan.refusals)),
                              *(f"{p.code} at line {p.line}: no fix"
                                for p in plan.without_fix(chosen))],
                "notebook": is_notebook(full)}

    def diff(self, base: str, head: str | None, modes: list[str] | None) -> dict[str, Any]:
        with self._tracing("diff"):
            chosen = self._modes(modes)
            if chosen is not None:  # a mode this machine cannot run is left out, as by the CLI
                chosen = available_modes(chosen)[0]
            # The engine alone: the revisions are checked in temporary folders, whose
            # call-site indexes the kept pipeline would keep after they are gone.
            diff = diff_revisions(self.workspace, base, head, chosen, engine=self.engine())
        return diff_json(base, head, diff.changes, diff.refused)

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
