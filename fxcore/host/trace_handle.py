"""A job submitted to the engine: its future result, the host's parse of its file, and a way to
stop it, child included."""

from __future__ import annotations

from fxcore.host.submissions import Submission
from fxcore.host.zygote_host import ZygoteProcess
from fxcore.model.job_spec import TraceJob
from fxcore.workspace.discovery import ParsedFile


class TraceHandle(Submission[tuple[ZygoteProcess, int]]):
    """A job the engine runs: cancelling it kills its child (the zygote's, by pid)."""

    def __init__(self, job: TraceJob, parsed: ParsedFile | None = None) -> None:
        super().__init__(job)
        #: The file as the caller read and parsed it to prepare the job (``None``: the engine
        #: reads it when the job starts); the verdicts of classes whose child died are
        #: located in it.
        self.parsed = parsed
        #: When (``time.monotonic``) the job's classes must all be done: set as its first
        #: child announces them, ``file-timeout`` (scaled) later, and kept for the children
        #: after it (``fxcore.host.child_run``).
        self.file_deadline: float | None = None

    def _stop(self, running: tuple[ZygoteProcess, int]) -> None:
        zygote, pid = running
        zygote.kill(pid)
