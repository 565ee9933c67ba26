"""The engine a language-server session's traces run on: made when first needed, closed when
the session ends or trust is withdrawn, and the jobs of a running workspace trace."""

from __future__ import annotations

import threading
from collections.abc import Iterable

from fx_lsp.server.documents import StartedStage
from fx_lsp.server.settings import Settings
from fxcore.checking.pipeline import CheckHandle, Pipeline
from fxcore.fixing.fix_plan import RootOf
from fxcore.host.cache import ResultCache
from fxcore.host.engine import Engine
from fxcore.model.job_spec import TraceJob
from fxcore.reporting.mode_phases import later_names, phase_names, stage_jobs
from fxcore.workspace.paths import trace_jobs


class TraceEngine:
    def __init__(self, root_of: RootOf, settings: Settings) -> None:
        self._root_of = root_of
        self._settings = settings
        self.engine: Engine | None = None
        #: Jobs' way through the engine (``fxcore.checking.pipeline``), with the cache and the
        #: call-site index: made with the engine, closed with it.
        self.pipeline: Pipeline | None = None
        #: The client sends didChangeWatchedFiles for the workspace's files (we registered).
        self.watches_files = False
        #: Jobs of a running workspace trace (``fx_lsp.server.workspace_trace``).
        self.workspace_handles: set[CheckHandle] = set()

    def ensure_pipeline(self) -> Pipeline:
        if self.pipeline is None:
            self.engine = Engine()
            # Unchanged files (and their imports) are answered from .fx-lsp-cache/.
            self.pipeline = Pipeline(self.engine, ResultCache())
            # Starting the worker imports torch (over a second): not on the event loop.
            threading.Thread(target=self.engine.warm_up, daemon=True).start()
        return self.pipeline

    def close(self, wait: bool = True) -> None:
        """Kill the workers. ``wait=False`` closes in a thread, for callers on the event loop:
        closing can take seconds (a job waits for its worker's pipes), and the worker process
        exits by itself when this process does."""
        engine, self.engine = self.engine, None
        pipeline, self.pipeline = self.pipeline, None
        if engine is None and pipeline is None:
            return

        def close() -> None:
            # The engine first: a job that waits for its zygote to start stops at once.
            if engine is not None:
                engine.close()
            if pipeline is not None:
                pipeline.close()

        if wait:
            close()
        else:
            threading.Thread(target=close, name="fx-lsp-close", daemon=True).start()

    def start(self, path: str, overlays: dict[str, str], stage: int) -> StartedStage | None:
        """Stage ``stage`` of a document's trace (``fx_lsp.server.documents.StartTrace``)."""
        jobs = trace_jobs([path], self._root_of, self._settings.engine_config, overlays)
        if not jobs:
            return None
        pipeline = self.ensure_pipeline()
        # The single-call stage's modes run side by side when the engine has workers and CPUs
        # for it.
        phases = stage_jobs(jobs[0], stage, side_by_side=pipeline.engine.side_by_side)
        if not phases:
            return None
        if not self.watches_files:
            # No file events tell the call-site index what changed on disk: the job looks.
            pipeline.call_sites.rescan_before_next_use()
        return StartedStage([pipeline.submit(job) for job, _ in phases],
                            [phase_names(phase) for _, phase in phases],
                            later_names(jobs[0].config.modes, stage))

    def submit_workspace(self, jobs: list[TraceJob]) -> list[CheckHandle]:
        """A workspace trace's jobs, started and pending until ``workspace_jobs_ended``."""
        pipeline = self.ensure_pipeline()
        # Changes no file event announced are found by one walk of each workspace, not one a job.
        pipeline.call_sites.rescan_before_next_use()
        handles = [pipeline.submit(job) for job in jobs]
        self.workspace_handles.update(handles)
        return handles

    def workspace_jobs_ended(self, handles: Iterable[CheckHandle]) -> None:
        self.workspace_handles.difference_update(handles)
