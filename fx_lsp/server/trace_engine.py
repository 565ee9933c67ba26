"""The engine session (``fxcore.api.session.EngineSession``) a language-server session's traces
run on: made when first needed, closed when the session ends or trust is withdrawn, and the
jobs of a running workspace trace."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from fx_lsp.server.documents import StartedStage
from fx_lsp.server.settings import Settings
from fxcore.api.session import CheckHandle, EngineSession
from fxcore.model.job_spec import TraceJob
from fxcore.reporting.mode_phases import later_names, phase_names, stage_jobs


class TraceEngine:
    def __init__(self, root_of: Callable[[str], str], settings: Settings) -> None:
        self._root_of = root_of
        self._settings = settings
        #: The engine, with the cache and the call-site index that live as long as it.
        self.session: EngineSession | None = None
        #: The client sends didChangeWatchedFiles for the workspace's files (we registered).
        self.watches_files = False
        #: Jobs of a running workspace trace (``fx_lsp.server.workspace_trace``).
        self.workspace_handles: set[CheckHandle] = set()

    def ensure_session(self) -> EngineSession:
        if self.session is None:
            self.session = EngineSession(keeps_workspace=True)
            # Starting the worker imports torch (over a second): not on the event loop.
            self.session.warm_up()
        return self.session

    def close(self, wait: bool = True) -> None:
        """Kill the workers. ``wait=False`` closes in a thread, for callers on the event loop:
        closing can take seconds (a job waits for its worker's pipes), and the worker process
        exits by itself when this process does."""
        session, self.session = self.session, None
        if session is None:
            return
        if wait:
            session.close()
        else:
            threading.Thread(target=session.close, name="fx-lsp-close", daemon=True).start()

    def start(self, path: str, overlays: dict[str, str], stage: int,
              ready: Callable[[int], None]) -> StartedStage | None:
        """Stage ``stage`` of a document's trace (``fx_lsp.server.documents.StartTrace``)."""
        job = EngineSession.document_job(path, self._root_of, self._settings.engine_config,
                                         overlays)
        if job is None:
            return None
        session = self.ensure_session()
        # The single-call stage's modes run side by side when the engine has workers and CPUs
        # for it (and the loop of calls, beside them, a worker of its own).
        phases = stage_jobs(job, stage, side_by_side=session.engine.side_by_side,
                            workers=session.engine.workers)
        if not phases:
            return None
        # No file events tell the call-site index what changed on disk: the job looks.
        handles = session.submit([phase_job for phase_job, _ in phases],
                                 rescan=not self.watches_files, ready=ready)
        return StartedStage(handles, [phase_names(phase) for _, phase in phases],
                            later_names(job.config.modes, stage),
                            [phase.held for _, phase in phases])

    def submit_workspace(self, jobs: list[TraceJob]) -> list[CheckHandle]:
        """A workspace trace's jobs, started and pending until ``workspace_jobs_ended``."""
        session = self.ensure_session()
        # Changes no file event announced are found by one walk of each workspace, not one a job.
        handles = session.submit(jobs, rescan=True)
        self.workspace_handles.update(handles)
        return handles

    def workspace_jobs_ended(self, handles: Iterable[CheckHandle]) -> None:
        self.workspace_handles.difference_update(handles)
