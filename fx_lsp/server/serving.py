"""``fx-lsp serve``: a new session, its server with every handler on it, run on stdio or
TCP."""

from __future__ import annotations

import logging
import sys

from fx_lsp.server.handlers import document_sync, lifecycle, pulls, requests
from fx_lsp.server.language_server import FxLanguageServer
from fx_lsp.server.session import Session
from fxcore.host.zygote_host import WORKER_LOG


def create_session() -> Session:
    """A new session, its server with every handler on it (``fx_lsp.server.handlers``)."""
    session = Session(FxLanguageServer())
    for handlers in (lifecycle.handlers, document_sync.handlers, requests.handlers,
                     pulls.handlers):
        handlers.register(session.server, session)
    return session


def serve(tcp: tuple[str, int] | None = None) -> None:
    """Run the server on stdio, or on ``tcp = (host, port)``; stop the engine on the way out."""
    logging.basicConfig(level=logging.WARNING)
    # What the zygote prints (torch's import warnings) goes to the log (stderr: VS Code's
    # output channel), never to stdout, the protocol.
    WORKER_LOG.setLevel(logging.INFO)
    # Quick-fix requests are planned in a thread (their parses run in another process); a
    # shorter switch interval than the default 5 ms lets the event loop take the GIL back
    # sooner, so other requests wait less.
    sys.setswitchinterval(0.001)
    session = create_session()
    try:
        if tcp is None:
            session.server.start_io()
        else:
            session.server.start_tcp(*tcp)
    finally:
        session.close()
