"""Pull diagnostics handlers (LSP 3.17): ``textDocument/diagnostic`` answers once the
document's trace has published its first stage, from what the server published, the stages
still to come named (``fx_lsp.features.pull_diagnostics``);
``workspace/diagnostic`` traces the workspace as the Trace Workspace command does, streams each
file's report as a partial result when the client gave a token, and reports progress."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lsprotocol import types
from pygls.uris import to_fs_path

from fx_lsp.features import diagnostics
from fx_lsp.server import workspace_trace
from fx_lsp.server.handlers import Handlers
from fx_lsp.server.protocol import CommandProgress, guarded
from fx_lsp.server.session import Session
from fxcore.api.session import CheckHandle
from fxcore.model.job_spec import TraceJob
from fxcore.model.results import FileResult
from fxcore.workspace.notebook.cells import is_notebook

handlers = Handlers()


def _document_uris(session: Session, path: str) -> list[str]:
    """The URIs the diagnostics of ``path`` are published on: an open notebook's cells', else
    the file's (an open document's as the client named it)."""
    notebook = session.notebooks.get(path)
    if notebook is not None:
        return [cell.uri for cell in notebook.cells]
    document = session.documents.get(path)
    return [document.uri if document is not None else diagnostics.path_to_uri(path)]


@handlers.feature(types.TEXT_DOCUMENT_DIAGNOSTIC)
@guarded()
async def document_diagnostic(
    session: Session, params: types.DocumentDiagnosticParams
) -> types.DocumentDiagnosticReport | dict[str, Any]:
    uri = params.text_document.uri
    cell = session.texts.cell_of(uri)
    path = cell[0].path if cell is not None else to_fs_path(uri) or ""
    # A pull right after an open or a save gets that text's verdicts, not the previous ones:
    # fx's at least, the modes still to come in ``pending`` (re-pulled on refresh, or pushed).
    await session.until_traced(path)
    published = session.publisher.published
    report = published.report(uri, params.previous_result_id)
    if not isinstance(report, types.RelatedFullDocumentDiagnosticReport):
        return report  # "unchanged": its id stands for the pending modes too
    # An fx-lsp field beside LSP's: as JSON, since lsprotocol's types hold none.
    return {**session.server.protocol._converter.unstructure(report),
            "pending": published.pending(uri)}


class _Streaming(workspace_trace.Host):
    """The session as a workspace trace's host, each published file's report also streamed as
    a partial result of the ``workspace/diagnostic`` request."""

    def __init__(self, session: Session, params: types.WorkspaceDiagnosticParams) -> None:
        self._session = session
        self._token = params.partial_result_token
        self._previous = {given.uri: given.value for given in params.previous_result_ids}
        #: URIs already sent in a partial result: the final answer leaves them out.
        self.streamed: set[str] = set()
        #: The files the trace checks.
        self.paths: list[str] = []

    def items(self, paths: Iterable[str]) -> list[types.WorkspaceDocumentDiagnosticReport]:
        session = self._session
        uris = [uri for path in paths for uri in _document_uris(session, path)]
        versions = {d.uri: d.version for d in session.documents if not is_notebook(d.path)}
        return session.publisher.published.workspace_items(
            [uri for uri in uris if uri not in self.streamed], self._previous, versions)

    def workspace_jobs(self) -> tuple[list[TraceJob], dict[str, int]]:
        jobs, versions = self._session.workspace_jobs()
        self.paths = [job.path for job in jobs]
        return jobs, versions

    def submit_workspace(self, jobs: list[TraceJob]) -> list[CheckHandle] | None:
        return self._session.submit_workspace(jobs)

    def workspace_jobs_ended(self, handles: Iterable[CheckHandle]) -> None:
        self._session.workspace_jobs_ended(handles)

    def publish_traced(self, path: str, result: FileResult, versions: dict[str, int]) -> None:
        self._session.publish_traced(path, result, versions)
        self._stream([path])

    def publish_parent_verdicts(self, traced: list[tuple[str, FileResult]],
                                versions: dict[str, int]) -> None:
        self._session.publish_parent_verdicts(traced, versions)

    def _stream(self, paths: list[str]) -> None:
        if self._token is None:
            return
        items = self.items(paths)
        if items:
            self.streamed.update(item.uri for item in items)
            self._session.server.progress(types.ProgressParams(
                token=self._token,
                value=self._session.server.protocol._converter.unstructure(
                    types.WorkspaceDiagnosticReportPartialResult(items=items))))


@handlers.feature(types.WORKSPACE_DIAGNOSTIC)
@guarded(default=types.WorkspaceDiagnosticReport(items=[]))
async def workspace_diagnostic(
    session: Session, params: types.WorkspaceDiagnosticParams
) -> types.WorkspaceDiagnosticReport:
    host = _Streaming(session, params)
    # The client cancelling the request cancels this task: the trace's jobs are cancelled
    # with it (``workspace_trace.trace_workspace``).
    await workspace_trace.trace_workspace(
        host, CommandProgress(session.server.protocol, params.work_done_token))
    # Each file traced, and each open document (what a pushing client sees of the workspace).
    return types.WorkspaceDiagnosticReport(
        items=host.items([*host.paths, *(d.path for d in session.documents)]))
