"""What ``fx-lsp mcp``'s tools do, without the MCP SDK: each calls the engine's session
(``fxcore.api.session.EngineSession``: check, explain, graph, fix, diff), as the command line
does, on one warm session that the server keeps (its call-site index built once, rescanned
each run), with the workspace's configuration (parsed again only when ``pyproject.toml``
changes, ``fx_lsp.mcp_server.project_configs``) and the shared ``.fx-lsp-cache/``, and returns
the data it gives: ``check`` the report ``fx-lsp check --output-format json`` prints, ``diff``
that of ``fx-lsp diff --output-format json``. Bad input raises ``ToolInputError`` with a
message an agent can act on.

One tool call traces at a time (``_lock``): the engine runs one run's jobs, and a run's
messages on stderr are captured for its error, which is process-wide. A call the client
cancels stops its trace (``stop``): its workers are killed and its run submits nothing more, so
the next call does not wait for it; a call cancelled before its turn never traces.
"""

from __future__ import annotations

import contextlib
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
from fxcore.api.check import UnreadableConfig
from fxcore.api.explain import known_codes
from fxcore.api.git_revisions import GitError
from fxcore.api.graph import GraphTargetError, graph_json
from fxcore.api.revision_diff import diff_json
from fxcore.api.session import ChosenModes, EngineSession, ModeError, choose_modes
from fxcore.api.workers import ZygoteError, installed_torch_support
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
        self._configs = ProjectConfigs()
        #: The warm session every tool call traces on, its engine started on first use.
        self.session = EngineSession(keeps_workspace=True, read_config=self._configs)
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
    def _modes(modes: list[str] | None) -> ChosenModes | None:
        """The capture modes asked for, in their order, those this machine cannot run left
        out; None: the workspace's."""
        try:
            return choose_modes(modes or None)
        except ModeError as error:
            raise ToolInputError(str(error)) from error

    def _trusted(self) -> None:
        if not self.trusted:
            raise ToolInputError(UNTRUSTED)

    # -- the warm session's calls ------------------------------------------------------------

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
            self.session.warm_up()  # made before the call can be stopped: ``stop`` sees it
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
                    self.session.resume()

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
            if self._tracing_call is not cancelled:
                return
            self.session.interrupt()

    # -- the tools --------------------------------------------------------------------------

    def check(self, paths: list[str] | None, modes: list[str] | None,
              loop_of_calls: bool = True) -> dict[str, Any]:
        """The report of ``fx-lsp check PATHS --output-format json``, the workspace's
        baseline taken out as the command line takes it. Without ``loop_of_calls``, where
        compile mode ran, the report's ``pending`` names the stage it lacks (as an editor's
        pull does): ``compile-loop``, its recompilation findings."""
        full = [self._path(path) for path in paths or ["."]]
        with self._tracing("check"):
            where = self.session.baseline(full)  # before the trace: it stops the call at once
            run = self.session.check(full, self._modes(modes), baseline_file=where,
                                     loop_of_calls=loop_of_calls)
        report = json_report(run.shown())
        if not loop_of_calls and any(module.mode == LOOP_MODE for result in run.results
                                     for module in result.modules):
            report["pending"] = [LOOP_NAME]
        return report

    @staticmethod
    def explain(code: str) -> dict[str, str]:
        doc = EngineSession.explain(code)
        if doc is None:
            raise ToolInputError(f"unknown code {code!r}; the codes are "
                                 f"{', '.join(known_codes())}")
        return {"code": doc.code, "documentation": doc.text}

    def graph(self, path: str, class_name: str, mode: str | None) -> dict[str, Any]:
        full = self._source(path)
        try:
            with self._tracing("check"):
                module = self.session.graph(full, class_name, self._modes([mode] if mode else None))
        except GraphTargetError as error:
            errors = error.file_errors
            raise ToolInputError(f"{path}: {error}" + (
                f" ({errors[0]})" if errors and errors[0] not in str(error) else "")
            ) from error
        return graph_json(module)

    def fix(self, path: str, code: str | None, line: int | None, apply: bool,
            unsafe: bool) -> dict[str, Any]:
        if code is None and line is None:
            raise ToolInputError("give the code of the problem to fix, its line, or both")
        full = self._source(path)
        with self._tracing("check"):
            outcome = self.session.fix(full, code, line, unsafe)
        chosen, plan = outcome.chosen, outcome.plan
        if not chosen:
            found = ", ".join(f"{p.code} at line {p.line}" for p in outcome.problems) or "none"
            raise ToolInputError(f"no such problem in {path}; its problems: {found}")
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
            diff = self.session.diff(self.workspace, base, head, self._modes(modes))
        return diff_json(base, head, diff.changes, diff.refused)

    def close(self) -> None:
        """Kill the workers, and wait for a call still tracing to end (its jobs stop with
        them), so that nothing runs on while the process exits."""
        self.session.close()
        if self._lock.acquire(timeout=30):
            self._lock.release()
