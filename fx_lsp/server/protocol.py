"""What fx-lsp adds to pygls's protocol: request cancellation that long commands can see, the
progress of a command (the client's token, or one created), handlers that never let an
exception escape, and big results encoded off the event loop."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import json
import logging
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from lsprotocol import types
from pygls.protocol import LanguageServerProtocol, lsp_method

from fx_lsp.features import pull_diagnostics
from fx_lsp.features.initialization_options import client_settings

#: fx-lsp's own methods (docs/protocol.md).
GENERATED_CODE = "fxLsp/generatedCode"
GRAPH = "fxLsp/graph"
STATUS = "fxLsp/status"
TRACED = "fxLsp/traced"
TRACE_WORKSPACE = "fxLsp.server.traceWorkspace"

logger = logging.getLogger(__name__)

#: The ``workDoneToken`` of the ``workspace/executeCommand`` request being handled.
work_done_token: contextvars.ContextVar[types.ProgressToken | None] = contextvars.ContextVar(
    "work_done_token", default=None
)


class FxProtocol(LanguageServerProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: Ids of requests the client cancelled. pygls answers them as cancelled but cannot stop
        #: a command handler that already runs, so long commands check this set themselves.
        self.cancelled_requests: set[Any] = set()
        #: Writes of results sent by ``_send_response`` still under way (asyncio keeps only
        #: weak references to tasks).
        self._writes: set[asyncio.Future[Any]] = set()
        #: The client sent ``exit``: nothing is sent after it (``_send_data``).
        self.exited = False

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        self.cancelled_requests.add(msg_id)
        super()._handle_cancel_notification(msg_id)

    @lsp_method(types.INITIALIZE)
    def lsp_initialize(self, params: types.InitializeParams) -> Any:
        result = yield from super().lsp_initialize(params)
        # pygls declares every registered feature: pull diagnostics only to a client that can
        # pull and wants to (``fx_lsp.features.pull_diagnostics``).
        pulls = pull_diagnostics.client_pulls(
            params, client_settings(params.initialization_options))
        self._server.pulls_diagnostics = pulls  # type: ignore[attr-defined]
        if not pulls:
            result.capabilities.diagnostic_provider = None
        return result

    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(self, params: types.ExecuteCommandParams) -> Any:
        # pygls passes a command handler only its arguments; the client's progress token is
        # in the params, so hand it over through a context variable (copied into the task).
        work_done_token.set(params.work_done_token)
        return (yield from super().lsp_workspace__execute_command(params))

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Any:
        self.exited = True
        yield from super().lsp_exit(*args)

    def _send_data(self, data: Any) -> None:
        # pygls closes the writer on ``exit``. A message sent after it (a trace that ends as
        # the event loop winds down, publishing its result) failed on the closed stdout, and
        # pygls reported that failure to the client, which failed again, without end: chained
        # tracebacks on stderr until its pipe was full, and a process that never exited
        # (tests/fx_lsp/server/handlers/test_clean_shutdown.py, under load).
        if not self.exited:
            super()._send_data(data)

    def _send_response(self, msg_id: Any, result: Any = None, error: Any = None) -> None:
        if self.exited:
            return
        if error is not None or not isinstance(result, JsonText) or self.writer is None:
            super()._send_response(msg_id, result, error)
            return
        # Encoded in a thread already: pygls would walk it again with cattrs and json.dumps
        # on the event loop (a quarter of a second for a 5,000-node graph).
        self._result_types.pop(msg_id, None)
        body = f'{{"jsonrpc": "2.0", "id": {json.dumps(msg_id)}, "result": {result}}}'
        header = (f"Content-Length: {len(body.encode(self.CHARSET))}\r\n"
                  f"Content-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n")
        written = self.writer.write((header + body).encode(self.CHARSET))
        if inspect.isawaitable(written):  # the TCP and WebSocket writers
            task = asyncio.ensure_future(written)
            self._writes.add(task)
            task.add_done_callback(self._writes.discard)


class CommandProgress:
    """The progress bar of the command being handled, when the client shows one, and whether
    the client cancelled the command (from that bar, or by cancelling the request)."""

    def __init__(self, protocol: FxProtocol, token: types.ProgressToken | None) -> None:
        self._protocol = protocol
        self._token = token
        self._request_id = protocol.msg_id

    @classmethod
    async def start(cls, protocol: FxProtocol) -> CommandProgress:
        """With the client's token for the command, else one we create when the client
        supports that."""
        token = work_done_token.get()
        window = protocol.client_capabilities.window
        if token is None and window and window.work_done_progress:
            token = str(uuid.uuid4())
            try:
                await protocol.progress.create_async(token)
            except Exception:
                token = None
        return cls(protocol, token)

    def begin(self, title: str, message: str) -> None:
        if self._token is not None:
            self._protocol.progress.begin(self._token, types.WorkDoneProgressBegin(
                title=title, cancellable=True, message=message, percentage=0))

    def report(self, message: str, percentage: int) -> None:
        if self._token is not None:
            self._protocol.progress.report(
                self._token, types.WorkDoneProgressReport(message=message, percentage=percentage))

    def cancelled(self) -> bool:
        # pygls cancels the token's future when the client cancels the progress.
        bar = self._protocol.progress.tokens.get(self._token) if self._token is not None else None
        if bar is not None and bar.cancelled():
            return True
        return self._request_id in self._protocol.cancelled_requests

    def end(self, message: str) -> None:
        if self._token is not None:
            self._protocol.cancelled_requests.discard(self._request_id)
            self._protocol.progress.end(self._token, types.WorkDoneProgressEnd(message=message))


class JsonText(str):
    """A handler's result already encoded as JSON (by ``json_text``), sent as it is."""


def json_text(value: Any) -> JsonText:
    """``value`` as JSON, for a thread to encode a big result: encoded a piece at a time, since
    one ``json.dumps`` of it all would hold the GIL (and stall the event loop) throughout."""
    return JsonText(_encoded(value, depth=0))


def _encoded(value: Any, depth: int) -> str:
    if isinstance(value, dict) and (depth <= 1 or len(value) > 16):
        return "{" + ",".join(f"{json.dumps(str(key))}:{_encoded(item, depth + 1)}"
                              for key, item in value.items()) + "}"
    if isinstance(value, list) and len(value) > 16:
        return "[" + ",".join(_encoded(item, depth + 1) for item in value) + "]"
    return json.dumps(value)


F = TypeVar("F", bound=Callable[..., Any])


def guarded(default: Any = None) -> Callable[[F], F]:
    """Never let an exception escape a handler, plain or ``async``: log it and answer
    ``default``. Cancellation of an async handler still propagates."""

    def decorate(function: F) -> F:
        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
                try:
                    return await function(*args, **kwargs)
                except asyncio.CancelledError:
                    raise
                except Exception:
                    logger.exception("fx-lsp: %s failed", function.__name__)
                    return default

            return async_wrapper  # type: ignore[return-value]

        @functools.wraps(function)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                return function(*args, **kwargs)
            except Exception:
                logger.exception("fx-lsp: %s failed", function.__name__)
                return default

        return wrapper  # type: ignore[return-value]

    return decorate
