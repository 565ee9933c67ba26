"""``fxLsp.server.traceWorkspace``: trace every Python file of the workspace folders, publish
each result as it arrives, report progress, and stop when the client cancels.

What it needs of the server is ``Host`` (``fx_lsp.server.session.Session`` is one), and of the
client ``fx_lsp.server.protocol.CommandProgress``: no more, so that the server imports it and
not the other way round.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Protocol

from fx_lsp.server.protocol import CommandProgress
from fx_lsp.verdicts_by_mode import verdicts_of
from fxcore.api.session import CheckHandle
from fxcore.model.job_spec import TraceJob
from fxcore.model.results import FileResult, first_verdicts

logger = logging.getLogger(__name__)


class Host(Protocol):
    """What a workspace trace does through the server."""

    def workspace_jobs(self) -> tuple[list[TraceJob], dict[str, int]]:
        """A job for each Python file of the workspace folders, traced with the open buffers'
        texts, and the versions of those buffers."""

    def submit_workspace(self, jobs: list[TraceJob]) -> list[CheckHandle] | None:
        """The jobs started, counted as pending until ``workspace_jobs_ended``; None when
        tracing is off (the workspace is not trusted: the server says so)."""

    def workspace_jobs_ended(self, handles: Iterable[CheckHandle]) -> None:
        """These jobs finished or were cancelled: no longer pending."""

    def publish_traced(self, path: str, result: FileResult, versions: dict[str, int]) -> None:
        """A result of ``path`` traced with the open buffers at ``versions``: published, for
        an open document only if its text is unchanged since."""

    def publish_parent_verdicts(self, traced: list[tuple[str, FileResult]],
                                versions: dict[str, int]) -> None:
        """The results published before the roots that build their classes were traced:
        published again, with the verdicts of those instances."""


async def trace_workspace(host: Host, progress: CommandProgress) -> dict[str, int]:
    jobs, versions = host.workspace_jobs()
    summary = {"files": len(jobs), "modules": 0, "failed": 0}
    handles = host.submit_workspace(jobs)
    if handles is None:
        return summary
    progress.begin("fx-lsp: tracing the workspace", f"0/{len(jobs)} files")
    done = 0
    traced: list[tuple[str, FileResult]] = []
    try:
        pending = {asyncio.wrap_future(h.future): h for h in handles}
        waiting = set(pending)
        while waiting:
            finished, waiting = await asyncio.wait(
                waiting, timeout=0.2, return_when=asyncio.FIRST_COMPLETED
            )
            if progress.cancelled():
                break
            for future in finished:
                handle = pending[future]
                done += 1
                if future.cancelled() or future.exception() is not None:
                    # Counted as done without a verdict: say why, or a file missing from the
                    # summary has no trace anywhere.
                    logger.warning("Trace Workspace: %s gave no result: %r", handle.job.path,
                                   None if future.cancelled() else future.exception())
                    continue
                result = future.result()
                classes = first_verdicts(result.modules)
                summary["modules"] += len(classes)
                summary["failed"] += sum(any(m.status == "failed"
                                             for m in verdicts_of(result.modules, first))
                                         for first in classes)
                host.publish_traced(handle.job.path, result, versions)
                traced.append((handle.job.path, result))
            if finished:
                progress.report(f"{done}/{len(jobs)} files", int(100 * done / max(len(jobs), 1)))
            host.workspace_jobs_ended(pending[future] for future in finished)
        host.publish_parent_verdicts(traced, versions)
    finally:
        for handle in handles:
            if not handle.future.done():
                handle.cancel()
        host.workspace_jobs_ended(handles)
        outcome = "cancelled" if done < len(jobs) else "done"
        progress.end(f"{outcome}: {summary['modules']} modules, {summary['failed']} failed")
    return summary
