"""The server's LSP handlers, one module per concern over the session
(``fx_lsp.server.session.Session``, its state) and a snapshot of the document a request is
about: ``lifecycle`` (initialize, shutdown, settings), ``document_sync`` (text and notebook
documents, watched files) and ``requests`` (hover, code actions, code lenses, inlay hints, the
generated code and graph requests, the workspace trace) and ``pulls`` (pull diagnostics).
Each module collects its handlers in a ``Handlers``; ``fx_lsp.server.serving.create_session``
puts them on a new server, each given the session as its first argument."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from pygls.lsp.server import LanguageServer

from fx_lsp.server.session import Session

Handler = Callable[..., Any]


class Handlers:
    """Handlers by LSP method or command, as ``LanguageServer.feature`` and ``command`` take
    them, kept until ``register`` puts them on a server."""

    def __init__(self) -> None:
        self._features: list[tuple[tuple[Any, ...], Handler]] = []
        self._commands: list[tuple[str, Handler]] = []

    def feature(self, *arguments: Any) -> Callable[[Handler], Handler]:
        def keep(handler: Handler) -> Handler:
            self._features.append((arguments, handler))
            return handler

        return keep

    def command(self, name: str) -> Callable[[Handler], Handler]:
        def keep(handler: Handler) -> Handler:
            self._commands.append((name, handler))
            return handler

        return keep

    def register(self, server: LanguageServer, session: Session) -> None:
        """Put the handlers on ``server``, each called with ``session`` first."""
        for arguments, handler in self._features:
            server.feature(*arguments)(_given(handler, session))
        for name, handler in self._commands:
            server.command(name)(_given(handler, session))


def _given(handler: Handler, session: Session) -> Handler:
    """``handler`` called with ``session`` first. pygls passes a handler its server only when
    the first parameter is named ``ls`` or typed as a server: this one has neither, so pygls
    passes the request's params (a command's arguments) alone. Positional only: pygls fills
    each other parameter of a command from its arguments. A coroutine function stays one, for
    pygls runs those as tasks."""
    if inspect.iscoroutinefunction(handler):

        async def given_async(*args: Any) -> Any:
            return await handler(session, *args)

        return given_async

    def given(*args: Any) -> Any:
        return handler(session, *args)

    return given
