"""A job submitted to the engine: its future result, what it is looked up in (the results cache
and the workspace's call sites), and a way to stop it, child included."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import dataclass, field

from fxcore.host.cache import ResultCache
from fxcore.host.zygote_host import ZygoteProcess
from fxcore.model.job_spec import TraceJob
from fxcore.model.results import FileResult
from fxcore.workspace.call_sites import CallSiteIndexes


@dataclass
class WorkspaceKnowledge:
    """What jobs are looked up in before and after they run: the results cache (``None``:
    none) and the index of each workspace's constructor calls. The server keeps one for its
    life; each ``fx-lsp check`` run has its own, so that one engine can serve several runs."""

    cache: ResultCache | None = None
    call_sites: CallSiteIndexes = field(default_factory=CallSiteIndexes)


class TraceHandle:
    """A submitted job: its future result, and a way to stop it."""

    def __init__(self, job: TraceJob, knowledge: WorkspaceKnowledge) -> None:
        self.job = job
        self.knowledge = knowledge
        self.future: Future[FileResult] = Future()
        self._lock = threading.Lock()
        self._cancelled = False
        self._running: tuple[ZygoteProcess, int] | None = None

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        """Stop the job: kill its child if it runs. Its future then raises
        ``CancelledError``."""
        with self._lock:
            self._cancelled = True
            running = self._running
        if not self.future.cancel() and running is not None:
            zygote, pid = running
            zygote.kill(pid)

    def _attach(self, zygote: ZygoteProcess, pid: int) -> bool:
        with self._lock:
            self._running = (zygote, pid)
            return not self._cancelled
