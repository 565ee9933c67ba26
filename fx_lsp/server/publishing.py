"""What the server sends on its own: messages (pop-ups and log lines), the status item's
state, each document's diagnostics (a notebook's into its cells, a closed file's from a
workspace trace), and the client's refreshes of code lenses and inlay hints.

``Messages`` and ``Publisher`` are objects the session holds (``fx_lsp.server.session``); they send
through pygls's server and read the session's state they are given, holding none of it but
what they last sent.
"""

from __future__ import annotations

import asyncio
from typing import Any

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from fx_lsp.features import diagnostics
from fx_lsp.features.baseline_hints import BaselineFiles
from fx_lsp.features.pull_diagnostics import Published
from fx_lsp.features.snapshot import Files
from fx_lsp.server import notebooks
from fx_lsp.server.documents import Document, Documents
from fx_lsp.server.language_server import FxLanguageServer
from fx_lsp.server.protocol import STATUS, TRACED
from fx_lsp.server.settings import Settings
from fxcore.api.workers import TorchSupport, network_isolation
from fxcore.model.results import CODES, FileResult
from fxcore.reporting.report import collect
from fxcore.workspace.notebook.cells import is_notebook

UNTRUSTED_MESSAGE = (
    "fx-lsp: tracing is off until the workspace is trusted (no code from it is imported or run)."
)


class Messages:
    """Pop-ups and log lines, each problem said once."""

    def __init__(self, server: LanguageServer) -> None:
        self._server = server
        self._reported: set[str] = set()

    def report_once(self, messages: list[str], kind: types.MessageType) -> None:
        for message in messages:
            if message not in self._reported:
                self._reported.add(message)
                self._server.window_show_message(
                    types.ShowMessageParams(type=kind, message=message))

    def warn(self, problems: list[str], where: str) -> None:
        """One read's configuration problems: each new one in the log, and one pop-up, the
        problem itself or, for several, how many (2,000 unknown keys made 2,000 pop-ups)."""
        new = [problem for problem in dict.fromkeys(problems) if problem not in self._reported]
        if not new:
            return
        self._reported.update(new)
        for problem in new:
            self._server.window_log_message(
                types.LogMessageParams(type=types.MessageType.Warning, message=problem))
        message = new[0] if len(new) == 1 else (
            f"fx-lsp: {len(new):,} problems in {where}, each in the fx-lsp log (VS Code: the "
            f"FX Trace output); the first: {new[0]}")
        self._server.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Warning, message=message))

    def report_torch(self, torch: TorchSupport) -> None:
        """A refused torch: one error pop-up (no diagnostics follow); an untested one: a line
        in the log."""
        if torch.refusal is not None:
            self.report_once([torch.refusal], types.MessageType.Error)
        elif torch.untested is not None:
            self._server.window_log_message(types.LogMessageParams(
                type=types.MessageType.Warning, message=torch.untested))

    def report_untrusted(self) -> None:
        self.report_once([UNTRUSTED_MESSAGE], types.MessageType.Info)

    def say_untrusted(self) -> None:
        """Trust was withdrawn: said every time."""
        self._server.window_show_message(
            types.ShowMessageParams(type=types.MessageType.Info, message=UNTRUSTED_MESSAGE))

    def log_worker_output(self, result: FileResult) -> None:
        """A worker that timed out or crashed: what it printed goes to the server's log (VS
        Code: the fx-lsp output channel), the clue most often needed to tell why."""
        ended = any(
            f.code == CODES["timeout"]
            for f in (*result.errors, *(f for m in result.modules for f in m.failures))
        )
        if ended and result.output.strip():
            self._server.window_log_message(
                types.LogMessageParams(
                    type=types.MessageType.Log,
                    message=f"fx-lsp: the worker for {result.path} timed out or crashed; "
                    f"what it printed (last {len(result.output)} characters):\n"
                    + result.output.rstrip(),
                )
            )

    async def log_network_isolation(self) -> None:
        """Say in the log which network isolation workers get here (the probe starts a
        throwaway process: waited for in a thread, off the event loop)."""
        description = await asyncio.to_thread(network_isolation.describe)
        self._server.window_log_message(
            types.LogMessageParams(type=types.MessageType.Info,
                                   message=f"fx-lsp: network isolation: {description}")
        )


class Publisher:
    """The status item's state, diagnostics, ``fxLsp/traced`` and refreshes."""

    def __init__(self, server: FxLanguageServer, settings: Settings, documents: Documents,
                 files: Files, open_notebooks: dict[str, notebooks.NotebookModule],
                 baselines: BaselineFiles) -> None:
        self._server = server
        self._settings = settings
        self._documents = documents
        self._files = files
        self._notebooks = open_notebooks
        self._baselines = baselines
        #: The status last sent: the same one is not sent again.
        self._status: tuple[str, int, str] | None = None
        #: What was published on each URI: what a pull answers (``pull_diagnostics``).
        self.published = Published()
        #: A ``workspace/diagnostic/refresh`` is planned for this turn of the event loop.
        self._refresh_planned = False

    def send(self, uri: str, shown: list[types.Diagnostic], version: int | None = None,
             pending: list[str] | None = None) -> None:
        """The one way diagnostics leave: recorded for pulls (with ``pending``, the modes
        still to come), and published to a client that does not pull, or a pulling client
        asked to pull again when they changed."""
        changed = self.published.record(uri, shown, pending)
        if self._server.pushes_diagnostics:
            self._server.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri=uri, diagnostics=shown, version=version))
        elif changed and not self._refresh_planned:
            # One refresh for the many URIs a result touches (a notebook's cells).
            self._refresh_planned = True
            asyncio.get_running_loop().call_soon(self._refresh)

    def _refresh(self) -> None:
        self._refresh_planned = False
        self._server.refresh_diagnostics()

    def status(self, state: str, pending: int, message: str) -> None:
        if (state, pending, message) == self._status:
            return
        self._status = (state, pending, message)
        params: dict[str, Any] = {"state": state, "pending": pending}
        if message:
            params["message"] = message
        self._server.protocol.notify(STATUS, params)

    def accepted(self, document: Document, touched: list[Document]) -> None:
        """A new result of ``document``: its diagnostics, ``fxLsp/traced`` (for a notebook,
        of each of its cells), the diagnostics of the ``touched`` documents, and refreshes."""
        assert document.result is not None
        self.publish(document)
        notebook = self._notebooks.get(document.path)
        # A notebook's views (generated code, graph) are of its cells.
        for uri in [cell.uri for cell in notebook.cells] if notebook else [document.uri]:
            self._server.protocol.notify(
                TRACED,
                {
                    "uri": uri,
                    "version": document.result_version,
                    "classes": list(dict.fromkeys(m.class_name for m in document.result.modules)),
                    # The modes whose results this trace has yet to publish.
                    "pending": document.pending_stages,
                    # The classes a running mode has yet to judge (its verdicts so far).
                    "unjudged": document.unjudged,
                },
            )
        for other in touched:
            self.publish(other)
        self._server.refresh_code_lenses()
        self._server.refresh_inlay_hints()

    def publish(self, document: Document) -> None:
        if not self._documents.is_current(document):
            # The result is of an older text: the client has moved the diagnostics it shows
            # with the edits, and a trace of this text publishes anew.
            return
        files = self._files
        others = self._documents.results_traced_with(document)
        report = self._baselines.as_hints(collect(
            [r for r in (document.result, *others) if r is not None],
            files.text_of,
            self._settings.selection,
            checked=[document.path] if document.result is not None else [],
        ), files.root_of(document.path), files.text_of)
        document.entries = diagnostics.build(
            document.path, report, files.lines_of, self._settings.options_for(document.path),
            self._server.encoding, files.cell_words,
        )
        notebook = self._notebooks.get(document.path)
        if notebook is not None:
            # A notebook's diagnostics, in the module, go to the cells they are in.
            for uri, shown in notebooks.cell_diagnostics(
                    notebook, [entry.diagnostic for entry in document.entries]).items():
                self.send(uri, shown, pending=document.pending_stages)
            return
        self.send(document.uri, [entry.diagnostic for entry in document.entries],
                  document.version, document.pending_stages)

    def publish_closed(self, path: str, result: FileResult) -> None:
        """The diagnostics of a file that is not open (from a workspace trace); a notebook's
        on its file, each naming its cell (``notebooks.closed_notebook_diagnostics``)."""
        files = self._files
        report = self._baselines.as_hints(
            collect([result], files.text_of, self._settings.selection),
            files.root_of(path), files.text_of)
        entries = diagnostics.build(
            path, report, files.lines_of, self._settings.options_for(path), self._server.encoding
        )
        shown = [e.diagnostic for e in entries]
        if is_notebook(path):
            shown = notebooks.closed_notebook_diagnostics(path, shown)
        self.send(diagnostics.path_to_uri(path), shown)

    def clear(self, uri: str) -> None:
        """No diagnostics on ``uri`` (an open notebook's: on each of its cells)."""
        notebook = self._notebooks.get(to_fs_path(uri) or "")
        if notebook is not None and notebook.uri == uri:
            for cell in notebook.cells:
                self.clear(cell.uri)
            return
        self.send(uri, [])
