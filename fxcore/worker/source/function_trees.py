"""The ``ast`` tree of a function's own source, read once per function in a worker: the readers
of constructor checks, constructor values and ``forward``'s uses of its arguments each walk
the same ``__init__`` or ``forward``. The source is what ``inspect`` finds, which for the job's
workspace files is the text the worker read and imported (``JobContext.parsed`` puts it in
``linecache``)."""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
from typing import Any


@functools.lru_cache(maxsize=256)
def function_tree(function: Any) -> ast.Module | None:
    """The dedented source of ``function`` parsed; None where it has none that parses (a
    builtin, a function made at run time, a file that changed since)."""
    try:
        return ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError):
        return None
