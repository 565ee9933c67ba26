"""The compile mode's one door into dynamo's private internals, and the one place that knows how
they differ between torch releases.

Every graph break passes ``InstructionTranslatorBase.log_graph_break``; the mode wraps it to
record each break. Its signature is torch's own business and has changed:

- torch 2.11 and later: ``log_graph_break(self, code_options, reason, exc)``, the break's
  exception (``gb_type``, ``real_stack``) passed in;
- torch 2.10: ``log_graph_break(self, code_options, reason="", user_stack=None)``: called inside
  the ``except`` of the break's exception for most breaks (``sys.exc_info()`` holds it), and
  for a data-dependent jump with the formatted message alone, which ``BreakFromMessage``
  stands in for. Its exceptions carry no ``gb_type``: the break's type is the first line of
  their message (``fxcore.worker.capture.dynamo_errors.graph_break_type``).

Which form this torch has is read from the hook's signature, not from torch's version.

Besides, dynamo times the guards of every frame it compiles, for its own metrics
(``guards.profile_guard_manager``); the mode has that answered without running
(``guard_latency_unmeasured``). The loop of calls has a call whose compile no later call would
meet name its failed guards and compile nothing (``stop_compiling``).
"""

from __future__ import annotations

import contextlib
import inspect
import sys
from collections.abc import Callable, Iterator
from typing import Any

from fxcore.worker.job.job_context import first_line

#: ``record(exc, reason)``: one graph break, as the mode records it.
RecordBreak = Callable[[BaseException, str], None]


class BreakFromMessage(Exception):
    """A break dynamo logged with its message alone (torch 2.10's data-dependent jump): what
    the mode reads of a break's exception, taken from the message."""

    def __init__(self, reason: str, user_stack: Any) -> None:
        super().__init__(reason)
        self.msg = reason
        self.gb_type = first_line(reason)
        self.real_stack = user_stack


def graph_break_hook() -> Any | None:
    """dynamo's class whose ``log_graph_break`` sees every break, or None in a torch without
    it (the mode then stops at the first break, and says so)."""
    try:
        from torch._dynamo.symbolic_convert import InstructionTranslatorBase
    except ImportError:
        return None
    return InstructionTranslatorBase if callable(
        getattr(InstructionTranslatorBase, "log_graph_break", None)) else None


def _exception_of(arguments: dict[str, Any], reason: str) -> BaseException:
    """The break's exception from ``log_graph_break``'s bound arguments, in either form."""
    passed = arguments.get("exc")
    if isinstance(passed, BaseException):
        return passed
    in_flight = sys.exc_info()[1]
    if in_flight is not None and str(in_flight) and str(in_flight) in reason:
        return in_flight
    user_stack = arguments.get("user_stack")
    if user_stack is None:
        import torch._guards

        user_stack = torch._guards.TracingContext.extract_stack()
    return BreakFromMessage(reason, user_stack)


@contextlib.contextmanager
def recording_breaks(hook: Any, record: RecordBreak) -> Iterator[None]:
    """``record`` called with each graph break dynamo logs while the block runs."""
    original: Callable[..., Any] = hook.log_graph_break
    signature = inspect.signature(original)

    def log_graph_break(self: Any, *args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        reason = str(bound.arguments.get("reason") or "")
        record(_exception_of(bound.arguments, reason), reason)
        return original(self, *args, **kwargs)

    hook.log_graph_break = log_graph_break
    try:
        yield
    finally:
        hook.log_graph_break = original


@contextlib.contextmanager
def guard_latency_unmeasured() -> Iterator[None]:
    """While the block runs, dynamo's measurement of how long a compiled frame's guards take
    to check (``torch._dynamo.guards.profile_guard_manager``, which flushes the CPU caches
    first) answers 0 at once. The figure only goes to dynamo's logs and metrics, never into
    a graph or a break; it cost about 45 ms a frame on a 2-core machine, a third of
    compiling a small module. A torch without it measures nothing to skip."""
    try:
        from torch._dynamo import guards
    except ImportError:
        yield
        return
    original = getattr(guards, "profile_guard_manager", None)
    if not callable(original):
        yield
        return
    guards.profile_guard_manager = lambda *_arguments: 0.0
    try:
        yield
    finally:
        guards.profile_guard_manager = original


def stop_compiling() -> Callable[[], None] | None:
    """Until the function returned is called, dynamo compiles no frame more: a frame whose
    cached graphs' guards all fail runs as it is, as at its recompile limit, once each failed
    guard has been named to ``guard_fail_fn`` (torch 2.10 to 2.15 name them before they check
    the limit). ``recompile_limit`` is set to 0 for that. None where this torch has no such
    limit, or where reaching it fails the call (``fail_on_recompile_limit_hit``)."""
    try:
        from torch._dynamo import config
        from torch._dynamo.cache_size import exceeds_recompile_limit
    except ImportError:
        return None
    previous = getattr(config, "recompile_limit", None)
    if not (callable(exceeds_recompile_limit) and isinstance(previous, int)) or getattr(
            config, "fail_on_recompile_limit_hit", False) is not False:
        return None
    config.recompile_limit = 0
    return lambda: setattr(config, "recompile_limit", previous)


def eager_code_modes() -> bool:
    """Whether dynamo compiles while a dispatch mode that ignores compile internals is active
    and leaves the mode's ``__torch_dispatch__`` to run eagerly (torch 2.11+:
    ``inline_torch_dispatch_torch_compile``): the mode then sees only the code dynamo runs
    eagerly. Without the first, any active mode makes dynamo skip every frame; without the
    second (torch 2.10), dynamo traces into the mode's handler and breaks graphs real torch
    does not."""
    try:
        from torch._dynamo import config
        from torch.utils._python_dispatch import (
            TorchDispatchMode,
            is_in_any_mode_without_ignore_compile_internals,
        )
    except ImportError:
        return False
    return (callable(is_in_any_mode_without_ignore_compile_internals)
            and callable(getattr(TorchDispatchMode, "ignore_compile_internals", None))
            and getattr(config, "inline_torch_dispatch_torch_compile", False) is True)
