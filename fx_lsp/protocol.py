"""What fx-lsp adds to pygls's protocol: request cancellation that long commands can see, the
client's progress token for commands, and handlers that never let an exception escape."""

from __future__ import annotations

import asyncio
import contextvars
import functools
import inspect
import logging
from collections.abc import Callable
from typing import Any, TypeVar

from lsprotocol import types
from pygls.protocol import LanguageServerProtocol, lsp_method

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

    def _handle_cancel_notification(self, msg_id: Any) -> None:
        self.cancelled_requests.add(msg_id)
        super()._handle_cancel_notification(msg_id)

    @lsp_method(types.WORKSPACE_EXECUTE_COMMAND)
    def lsp_workspace__execute_command(self, params: types.ExecuteCommandParams) -> Any:
        # pygls passes a command handler only its arguments; the client's progress token is
        # in the params, so hand it over through a context variable (copied into the task).
        work_done_token.set(params.work_done_token)
        return (yield from super().lsp_workspace__execute_command(params))


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
