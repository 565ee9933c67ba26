"""A job submitted to the engine: its future result, the host's parse of its file, and a way to
stop it, child included."""

from __future__ import annotations

import threading
from concurrent.futures import Future

from fxcore.host.zygote_host import ZygoteProcess
from fxcore.model.job_spec import TraceJob
from fxcore.model.results import FileResult
from fxcore.workspace.discovery import ParsedFile


class TraceHandle:
    """A submitted job: its future result, and a way to stop it."""

    def __init__(self, job: TraceJob, parsed: ParsedFile | None = None) -> None:
        self.job = job
        #: The file as the caller read and parsed it to prepare the job (``None``: the engine
        #: reads it when the job starts); the verdicts of classes whose child died are
        #: located in it.
        self.parsed = parsed
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
