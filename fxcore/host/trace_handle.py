"""A job submitted to the engine: its future result, the host's parse of its file, and a way to
stop it, child included."""

from __future__ import annotations

from typing import Protocol

from fxcore.host.submissions import Submission
from fxcore.host.zygote_host import ZygoteProcess
from fxcore.model.job_spec import TraceJob
from fxcore.model.results import ModuleResult
from fxcore.workspace.discovery import ParsedFile


class VerdictListener(Protocol):
    """Told of a job's classes and verdicts as its children send them, on the thread that
    reads them (each call must be quick: the child waits on its pipe meanwhile). What it is
    told is what the children sent, before the engine's end of the job: a class, mode pair a
    retried child judges again comes again (the engine keeps the first), and a child whose
    later message is refused has what it sent discarded from the job's result."""

    def announced(self, names: list[str]) -> None:
        """A child of the job is about to judge the classes ``names``, in this order."""

    def judged(self, module: ModuleResult) -> None:
        """A child sent the verdict of one class in one mode."""


class TraceHandle(Submission[tuple[ZygoteProcess, int]]):
    """A job the engine runs: cancelling it kills its child (the zygote's, by pid)."""

    def __init__(self, job: TraceJob, parsed: ParsedFile | None = None,
                 listener: VerdictListener | None = None) -> None:
        super().__init__(job)
        #: Told of each verdict as it arrives, before the job ends (``None``: no one).
        self.listener = listener
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
