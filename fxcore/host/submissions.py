"""A submitted job, its future result and a way to stop what runs it, and the set of jobs a runner
has under way, which it stops when it closes: the engine's (a child) and the checking
pipeline's (the engine's job) alike."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from concurrent.futures import CancelledError, Future
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from fxcore.model.job_spec import TraceJob
from fxcore.model.results import FileResult

#: What a submission runs on once it has started: a child, a job of the engine's.
Running = TypeVar("Running")
#: A kind of submission.
Handle = TypeVar("Handle", bound="Submission[Any]")


class Submission(ABC, Generic[Running]):
    """A submitted job: its future result, and a way to stop it, whatever runs it."""

    def __init__(self, job: TraceJob) -> None:
        self.job = job
        self.future: Future[FileResult] = Future()
        self._lock = threading.Lock()
        self._cancelled = False
        self._running: Running | None = None

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        """Stop the job: stop what runs it if it started. Its future then raises
        ``CancelledError``."""
        with self._lock:
            self._cancelled = True
            running = self._running
        if not self.future.cancel() and running is not None:
            self._stop(running)

    @abstractmethod
    def _stop(self, running: Running) -> None:
        """Stop the job where it runs."""

    def _attach(self, running: Running) -> bool:
        """The job runs on ``running`` now: False when it was cancelled first (the caller
        then stops it)."""
        with self._lock:
            self._running = running
            return not self._cancelled


@dataclass(eq=False)
class Submissions(Generic[Handle]):
    """The submissions a runner (the engine, the pipeline) has under way: each is forgotten
    once its future is done."""

    runner: str
    closed: bool = False
    #: Set by ``interrupt``, until ``resume``: new submissions are refused as cancelled.
    interrupted: bool = False
    _handles: set[Handle] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, handle: Handle) -> None:
        """Count ``handle`` as under way; ``RuntimeError`` once the runner is closed."""
        with self._lock:
            if self.closed:
                raise RuntimeError(f"the {self.runner} is closed")
            if self.interrupted:
                raise CancelledError(f"the {self.runner}'s run was interrupted")
            self._handles.add(handle)

        def forget(_future: Future[FileResult]) -> None:
            with self._lock:
                self._handles.discard(handle)

        handle.future.add_done_callback(forget)

    def close(self) -> None:
        """Refuse new submissions and cancel those under way."""
        with self._lock:
            self.closed = True
        self._cancel_under_way()

    def interrupt(self) -> None:
        """Cancel the submissions under way and refuse new ones until ``resume``: a run
        stopped from another thread (an MCP call cancelled) submits nothing after its stop,
        whatever step it was at."""
        with self._lock:
            self.interrupted = True
        self._cancel_under_way()

    def resume(self) -> None:
        """Take submissions again, once the interrupted run has ended."""
        with self._lock:
            self.interrupted = False

    def _cancel_under_way(self) -> None:
        with self._lock:
            handles = list(self._handles)
        for handle in handles:
            handle.cancel()
