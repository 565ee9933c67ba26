"""Whole-file parses for quick fixes, run in a process of the server's own.

libcst's native parser and ``ast.parse`` hold the GIL for the whole parse: a quarter of a
second (the first libcst parse, over two seconds) on a 20,000-line file, during which a thread
would keep the event loop from answering anything. In a separate process they stall no request.

What runs there is fx-lsp's own pure functions (source text in, text or facts out, picklable by
reference): no workspace code. The process is spawned from this one, so it starts with the
server's safe ``sys.path`` and working folder, and it is shut down with the server.
"""

from __future__ import annotations

import functools
import multiprocessing
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

T = TypeVar("T")


def _function_key(function: Callable[..., Any]) -> Any:
    if isinstance(function, functools.partial):
        return (function.func, function.args, tuple(sorted(function.keywords.items())))
    return function


class ParseProcess:
    """``run(function, *args)`` in one spawned process, results cached per arguments (so per
    document version: cursor moves repeat the same requests). Blocking: call it off the event
    loop (the calling thread waits without the GIL)."""

    def __init__(self, cache_size: int = 64) -> None:
        self._cache_size = cache_size
        self._cache: dict[Any, Any] = {}
        self._lock = threading.Lock()
        self._executor: ProcessPoolExecutor | None = None
        self._closed = False

    def _pool(self) -> ProcessPoolExecutor:
        with self._lock:
            if self._closed:
                raise RuntimeError("the parse process is shut down")
            if self._executor is None:
                self._executor = ProcessPoolExecutor(
                    max_workers=1, mp_context=multiprocessing.get_context("spawn")
                )
            return self._executor

    def run(self, function: Callable[..., T], *args: Any) -> T:
        key = (_function_key(function), args)
        with self._lock:
            if key in self._cache:
                return self._cache[key]
        pool = self._pool()
        try:
            result = pool.submit(function, *args).result()
        except BrokenProcessPool:
            # Killed from outside (or out of memory): a fresh process serves the next call.
            with self._lock:
                if self._executor is pool:
                    self._executor = None
            raise
        with self._lock:
            self._cache[key] = result
            while len(self._cache) > self._cache_size:
                del self._cache[next(iter(self._cache))]
        return result

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._cache.clear()
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)
