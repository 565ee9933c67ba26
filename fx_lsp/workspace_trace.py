"""``fxLsp.server.traceWorkspace``: trace every Python file of the workspace folders, publish
each result as it arrives, report progress, and stop when the client cancels."""

from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING

from lsprotocol import types

from fx_lsp.protocol import work_done_token
from fx_lsp.verdicts_by_mode import first_verdicts, verdicts_of
from fxcore.results import FileResult
from fxcore.workspace import python_files, trace_jobs

if TYPE_CHECKING:
    from fx_lsp.server import FxLanguageServer


async def _progress_token(ls: FxLanguageServer) -> types.ProgressToken | None:
    """The client's token for the command, else one we create when the client supports it."""
    token = work_done_token.get()
    window = ls.client_capabilities.window
    if token is None and window and window.work_done_progress:
        token = str(uuid.uuid4())
        try:
            await ls.work_done_progress.create_async(token)
        except Exception:
            return None
    return token


async def trace_workspace(ls: FxLanguageServer) -> dict[str, int]:
    token = await _progress_token(ls)
    progress = ls.work_done_progress
    texts, versions = ls.documents.overlays()
    jobs = trace_jobs(
        python_files(ls.workspace_folders() or []), ls.root_of, ls.settings.engine_config, texts
    )
    summary = {"files": len(jobs), "modules": 0, "failed": 0}
    if not ls.settings.options.trusted:
        ls.report_untrusted()
        return summary
    if token is not None:
        progress.begin(
            token,
            types.WorkDoneProgressBegin(
                title="fx-lsp: tracing the workspace",
                cancellable=True,
                message=f"0/{len(jobs)} files",
                percentage=0,
            ),
        )
    progress_cancelled = progress.tokens.get(token) if token is not None else None
    request_id = ls.protocol.msg_id

    def cancelled() -> bool:
        if progress_cancelled is not None and progress_cancelled.cancelled():
            return True
        return request_id in ls.protocol.cancelled_requests

    engine = ls.ensure_engine()
    # Changes no file event announced are found by one walk of each workspace, not one a job.
    engine.call_sites.rescan_before_next_use()
    handles = [engine.submit(job) for job in jobs]
    ls.workspace_handles.update(handles)
    ls.send_status()
    done = 0
    finished_results: list[tuple[str, FileResult]] = []
    try:
        pending = {asyncio.wrap_future(h.future): h for h in handles}
        waiting = set(pending)
        while waiting:
            finished, waiting = await asyncio.wait(
                waiting, timeout=0.2, return_when=asyncio.FIRST_COMPLETED
            )
            if cancelled():
                break
            for future in finished:
                handle = pending[future]
                ls.workspace_handles.discard(handle)
                done += 1
                if future.cancelled() or future.exception() is not None:
                    continue
                result = future.result()
                classes = first_verdicts(result.modules)
                summary["modules"] += len(classes)
                summary["failed"] += sum(any(m.status == "failed"
                                             for m in verdicts_of(result.modules, first))
                                         for first in classes)
                ls.log_worker_output(result)
                publish_workspace_result(ls, handle.job.path, result, versions)
                finished_results.append((handle.job.path, result))
            if finished and token is not None:
                progress.report(
                    token,
                    types.WorkDoneProgressReport(
                        message=f"{done}/{len(jobs)} files",
                        percentage=int(100 * done / max(len(jobs), 1)),
                    ),
                )
            ls.send_status()
        # A file published before the roots that build its classes: now it gets them.
        for path, result in finished_results:
            if ls.documents.with_parent_verdicts(result) is not result:
                publish_workspace_result(ls, path, result, versions)
    finally:
        for handle in handles:
            if not handle.future.done():
                handle.cancel()
            ls.workspace_handles.discard(handle)
        ls.send_status()
        if token is not None:
            outcome = "cancelled" if done < len(jobs) else "done"
            ls.protocol.cancelled_requests.discard(request_id)
            progress.end(
                token,
                types.WorkDoneProgressEnd(
                    message=f"{outcome}: {summary['modules']} modules, {summary['failed']} failed"
                ),
            )
    return summary


def publish_workspace_result(
    ls: FxLanguageServer, path: str, result: FileResult, versions: dict[str, int]
) -> None:
    """A workspace trace's result, traced with the open buffers at ``versions``: published for
    a closed file; adopted by an open document if its text is unchanged since."""
    document = ls.documents.get(path)
    if document is None:
        ls.publish_closed(path, ls.documents.with_parent_verdicts(result))
    elif ls.documents.adopt(document, result, versions):
        ls.publish(document)
