"""The server's LSP handlers, one module per concern over ``FxLanguageServer`` (its state) and a
document snapshot: ``lifecycle`` (initialize, shutdown, settings), ``document_sync`` (text and
notebook documents, watched files) and ``requests`` (hover, code actions, code lenses, inlay
hints, the generated code and graph requests, the workspace trace). Each module collects its
handlers in a ``Handlers``; ``fx_lsp.server.create_server`` puts them on a new server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pygls.lsp.server import LanguageServer

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

    def register(self, server: LanguageServer) -> None:
        for arguments, handler in self._features:
            server.feature(*arguments)(handler)
        for name, handler in self._commands:
            server.command(name)(handler)
