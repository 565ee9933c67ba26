"""``fx-lsp serve``: a new session, its server with every handler on it, run on stdio or
TCP."""

from __future__ import annotations

import logging
import sys
from typing import BinaryIO

from fx_lsp.server.handlers import document_sync, lifecycle, pulls, requests
from fx_lsp.server.language_server import FxLanguageServer
from fx_lsp.server.session import Session
from fxcore.api.workers import WORKER_LOG
from fxcore.workspace.json_nesting import MAX_JSON_DEPTH, cut_to_depth, json_depth

logger = logging.getLogger(__name__)


class BoundedStdin:
    """stdin as pygls reads it (a header line at a time, then a body of the length it
    announced), each body nested deeper than ``MAX_JSON_DEPTH`` read with its too-deep values
    left empty (``fxcore.workspace.json_nesting.cut_to_depth``): Python's JSON parser gives up on
    thousands of levels, and pygls then drops the message, an ``initialize`` left unanswered.
    A setting so cut is refused, with a message, as any invalid setting is."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream

    def readline(self) -> bytes:
        return self._stream.readline()

    def read(self, size: int) -> bytes:
        body = self._stream.read(size)
        if json_depth(body) <= MAX_JSON_DEPTH:
            return body
        logger.warning("fx-lsp: a message from the client is nested more than %d levels "
                       "deep; its deeper values are read as empty", MAX_JSON_DEPTH)
        return cut_to_depth(body)


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
            session.server.start_io(BoundedStdin(sys.stdin.buffer))  # type: ignore[arg-type]
        else:
            session.server.start_tcp(*tcp)
    finally:
        session.close()
