"""The language server by composition: pygls's ``LanguageServer`` is subclassed once, as the
library's seam, and the session's state is objects it holds, not a chain of feature base
classes; the handlers pygls calls are given the session."""

from __future__ import annotations

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from fx_lsp.server.documents import Documents
from fx_lsp.server.language_server import FxLanguageServer
from fx_lsp.server.protocol import TRACE_WORKSPACE
from fx_lsp.server.publishing import Messages, Publisher
from fx_lsp.server.serving import create_session
from fx_lsp.server.session import Session
from fx_lsp.server.settings import Settings
from fx_lsp.server.trace_engine import TraceEngine
from fx_lsp.server.workspace_texts import WorkspaceTexts


def test_the_server_class_is_pygls_seam_alone() -> None:
    ours = [kind for kind in FxLanguageServer.__mro__ if kind.__module__.startswith("fx_lsp")]
    assert ours == [FxLanguageServer], ours
    assert not issubclass(Session, LanguageServer)


def test_the_session_holds_its_parts_and_pygls_calls_handlers_with_it() -> None:
    session = create_session()
    try:
        parts = {"server": FxLanguageServer, "texts": WorkspaceTexts, "settings": Settings,
                 "engine": TraceEngine, "documents": Documents, "messages": Messages,
                 "publisher": Publisher}
        for name, kind in parts.items():
            assert isinstance(getattr(session, name), kind), name
        # The handler as pygls keeps it: called with the params alone, it changes the session.
        handler = session.server.protocol.fm.features[types.WORKSPACE_DID_CHANGE_CONFIGURATION]
        handler(types.DidChangeConfigurationParams(settings={"fxLsp": {"severity": "hint"}}))
        assert session.settings.options.severity == types.DiagnosticSeverity.Hint
    finally:
        session.close()


def test_a_command_is_handed_its_arguments_as_the_client_sent_them() -> None:
    """pygls fills a command handler's parameters from the request's arguments: the session's
    handler takes them as they came (none for the workspace trace, which is how clients send
    it), or pygls answers the request with an error before the handler runs."""
    session = create_session()
    try:
        for arguments in ([], None, ["extra", 1]):
            request = session.server.protocol.lsp_workspace__execute_command(
                types.ExecuteCommandParams(command=TRACE_WORKSPACE, arguments=arguments))
            # pygls's generator hands back the handler to run and what it is called with.
            _handler, args, kwargs = next(request)
            assert (args, kwargs) == (tuple(arguments or ()), {})
    finally:
        session.close()
