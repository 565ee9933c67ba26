"""A torch.fx tracer that records every tracing failure and carries on.

Plain ``torch.fx`` stops at the first problem. ``RecoveringTracer`` is mixed into the
configured ``Tracer`` class and overrides the hooks torch.fx gives for the points where
symbolic values meet Python: ``to_bool`` (control flow) and ``iter`` (iteration, ``in``,
``*``/``**`` unpacking). The remaining points are dunder methods that ``Proxy`` lacks or
raises from (``len()``, ``int()``/``float()``/``range()``, item assignment); while a trace
runs, ``proxy_patches`` gives ``Proxy`` versions of them that record the failure and return
a stand-in value. Length and number dunders answer only where Python itself asks
(``asking_code``): torch's C code asks too, and goes on past a plain Proxy's error (tensor
indexing records the call), so there they raise as a plain Proxy does. Each hook then fires
where plain tracing raises, so the first recorded failure is the one
``torch.fx.symbolic_trace`` reports, and a trace that records nothing builds the same graph;
where user code catches a plain Proxy's error, a plain trace decides (``plain_agreement``).

The tracer also records, for the editor, which source lines produced which nodes, and the
order in which submodules ran and parameters were first used (as the FSDP execution-order
tracer does), from which unused submodules and parameters follow.
"""

from __future__ import annotations

import ast
import contextlib
import dis
import sys
import types
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import fx

from fxcore.rules import RULES
from fxcore.worker.capture.fx.asking_code import calls_python_function, expression_at
from fxcore.worker.job.capture_target import NodeOrigin, RecordedFailure
from fxcore.worker.source.locate import (
    SourceIndex,
    instruction_position,
    is_plumbing,
    stack_positions,
)

#: The message of each failure kind the tracer records, ``{detail}`` to fill (the registry).
MESSAGES: dict[str, str] = {kind: rule.message for rule in RULES for kind in rule.kinds
                            if rule.message is not None}

#: Bytecode instructions that iterate an object as part of ``*``/``**`` unpacking.
_UNPACKING_OPCODES = frozenset(
    {"CALL_FUNCTION_EX", "LIST_EXTEND", "SET_UPDATE", "DICT_MERGE", "DICT_UPDATE",
     "BUILD_TUPLE_UNPACK_WITH_CALL", "BUILD_LIST_UNPACK", "BUILD_MAP_UNPACK_WITH_CALL"}
)


def _calling_instruction(frame: Any) -> str | None:
    """The opcode name of the instruction a frame is executing."""
    if frame is None:
        return None
    for instruction in dis.get_instructions(frame.f_code):
        if instruction.offset == frame.f_lasti:
            return instruction.opname
    return None


def _user_frame() -> Any:
    """The innermost frame outside torch.fx and fxcore: the code that touched the Proxy."""
    frame = sys._getframe(1)
    while frame is not None and is_plumbing(frame.f_code.co_filename):
        frame = frame.f_back
    return frame


def _site(frame: Any) -> tuple[Any, int] | None:
    """The instruction a frame is executing, as a key (the frame object itself, so a new
    frame can never be mistaken for a finished one)."""
    return None if frame is None else (frame, frame.f_lasti)


class RecoveringTracer(fx.Tracer):
    """Mixin over a ``torch.fx.Tracer`` class: records failures and carries on.

    Use ``recovering_tracer_class(BaseTracer)`` to combine it with a custom tracer.
    """

    #: Qualified names (``module:Class``, ``module.Class`` or ``Class``) of extra leaf modules.
    extra_leaf_modules: frozenset[str] = frozenset()
    #: False for a trace as plain torch.fx makes it (``plain_agreement``): ``to_bool`` and
    #: ``iter`` then raise as the base tracer's do, and only the bookkeeping remains.
    recovers: bool = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.recorded_failures: list[RecordedFailure] = []
        self.node_origins: list[NodeOrigin] = []
        self.module_order: list[str] = []
        self.parameter_order: list[str] = []
        self._seen_parameters: set[str] = set()
        self._branch_visits: dict[tuple[int, int], int] = {}
        #: Instructions where iteration was recovered from: CPython then asks the same
        #: object for a length hint, which must not count as a second failure.
        self._iteration_sites: set[tuple[Any, int]] = set()
        #: Source of the frames being traced (linecache, which holds unsaved buffers too).
        self._sources = SourceIndex()
        self._workspace_filter: Callable[[str], bool] = lambda _path: False

    def set_sources(self, sources: SourceIndex) -> None:
        """The job's source index: the files it already read and parsed are not read or
        parsed again when a Proxy asks where it is used."""
        self._sources = sources

    def set_workspace_filter(self, is_workspace_path: Callable[[str], bool]) -> None:
        """Which files count as the user's own, for the line-to-node map."""
        self._workspace_filter = is_workspace_path

    # -- recording -------------------------------------------------------------------------

    def record_failure(self, kind: str, detail: str = "") -> RecordedFailure:
        failure = RecordedFailure(
            kind=kind,
            message=MESSAGES[kind].format(detail=detail),
            stack=stack_positions(sys._getframe(1)),
        )
        self.recorded_failures.append(failure)
        return failure

    def is_python_conversion(self) -> bool:
        """True when Python itself converts a Proxy to a number at the current instruction:
        a call of a builtin, ``math`` or ``operator`` function (``int(x)``, ``range(n)``,
        ``math.sqrt(x)``, ``operator.index(i)``) or a list subscript.

        torch's own argument parser also tries ``__index__``/``__int__``/``__float__`` on a
        Proxy, and when that fails it dispatches to ``__torch_function__``, recording a
        node. Succeeding there would silently put a constant into the graph, so only the
        conversions Python makes are recovered from; the rest fail as in plain tracing.
        """
        frame = _user_frame()
        expression = expression_at(frame, self._sources)
        return isinstance(expression, ast.Subscript) or calls_python_function(expression, frame)

    def is_python_length(self) -> bool:
        """True when Python code asks a Proxy's length at the current instruction: a call of
        a builtin or ``operator`` function (``len(x)``, ``reversed(x)``,
        ``operator.length_hint(x)``).

        torch's C code asks too, and a plain Proxy's ``RuntimeError`` is its answer: indexing
        a tensor (``self.cache[pos]``) asks whether the index is a sequence, clears the error
        and dispatches to ``__torch_function__``. A stand-in length there made torch walk the
        Proxy as a sequence of indices (FX002 and FX003 where plain torch.fx traces), so only
        the lengths Python asks are recovered from.
        """
        frame = _user_frame()
        return calls_python_function(expression_at(frame, self._sources), frame)

    def is_length_hint_after_iteration(self) -> bool:
        return _site(_user_frame()) in self._iteration_sites

    # -- torch.fx hooks --------------------------------------------------------------------

    def to_bool(self, obj: fx.Proxy) -> bool:
        if not self.recovers:
            return super().to_bool(obj)
        frame = _user_frame()
        self.record_failure("control-flow", detail=_describe_condition(frame))
        if frame is None:
            return True
        key = (id(frame.f_code), frame.f_lasti)
        visits = self._branch_visits.get(key, 0)
        self._branch_visits[key] = visits + 1
        if visits > 0:
            return False  # a `while` on a traced value ends after one pass
        # Go the way that keeps tracing: past a guard clause (`if bad: raise/return`),
        # into the branch otherwise.
        return not self._is_exiting_guard(frame)

    def _is_exiting_guard(self, frame: Any) -> bool:
        """True when the frame is testing an ``if`` whose body always leaves (``return``,
        ``raise``, ``break``, ``continue``) while its ``else`` does not."""
        tree = self._sources.tree(frame.f_code.co_filename)
        if tree is None:
            return False
        position = instruction_position(frame.f_code, frame.f_lasti, frame.f_lineno)
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and node.test.lineno == position.line and (
                position.column is None
                or node.test.col_offset <= position.column < (node.test.end_col_offset or 0)
                or node.test.end_lineno != node.test.lineno
            ):
                return _always_leaves(node.body) and not _always_leaves(node.orelse)
        return False

    def iter(self, obj: fx.Proxy) -> Iterator[Any]:
        if not self.recovers:
            return super().iter(obj)
        frame = _user_frame()
        site = _site(frame)
        if site is not None:
            self._iteration_sites.add(site)
        opname = _calling_instruction(frame)
        if opname == "CONTAINS_OP":
            self.record_failure("contains")
            return iter(())  # `in` is then False, without comparing traced values
        if opname in _UNPACKING_OPCODES:
            star = "**" if opname in {"DICT_MERGE", "DICT_UPDATE"} else "*"
            self.record_failure("unpacking", detail=f"{star} (as *args or **kwargs)")
            return iter(()) if star == "**" else iter((obj[0],))  # type: ignore[index]
        self.record_failure("iteration")
        # One symbolic element keeps `for`-loop bodies running once.
        return iter((obj[0],))  # type: ignore[index]

    def is_leaf_module(self, m: torch.nn.Module, module_qualified_name: str) -> bool:
        if self.extra_leaf_modules:
            cls = type(m)
            names = {
                cls.__name__,
                f"{cls.__module__}.{cls.__qualname__}",
                f"{cls.__module__}:{cls.__qualname__}",
            }
            if names & self.extra_leaf_modules:
                return True
        return super().is_leaf_module(m, module_qualified_name)

    def call_module(
        self,
        m: torch.nn.Module,
        forward: Callable[..., Any],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> Any:
        # A module not installed as a submodule is reported by torch.fx itself.
        with contextlib.suppress(NameError):
            self.module_order.append(self.path_of_module(m))
        return super().call_module(m, forward, args, kwargs)

    def create_proxy(self, kind: str, target: Any, args: Any, kwargs: Any, *rest: Any,
                     **more: Any) -> fx.Proxy:
        proxy = super().create_proxy(kind, target, args, kwargs, *rest, **more)
        if kind == "get_attr" and isinstance(target, str):
            self._note_parameter(target)
        elif kind == "call_module" and isinstance(target, str):
            submodule = self.root.get_submodule(target)
            for name, _ in submodule.named_parameters(prefix=target):
                self._note_parameter(name)
        return proxy

    def create_node(self, *args: Any, **kwargs: Any) -> fx.Node:
        node = super().create_node(*args, **kwargs)
        lines: list[tuple[str, int]] = []
        instructions: list[tuple[types.CodeType, int, int]] = []
        frame = sys._getframe(1)
        while frame is not None:
            filename = frame.f_code.co_filename
            if self._workspace_filter(filename):
                lines.append((filename, frame.f_lineno))
                instructions.append((frame.f_code, frame.f_lasti, frame.f_lineno))
            frame = frame.f_back
        if lines:
            self.node_origins.append(NodeOrigin(node, lines, instructions))
        return node

    def _note_parameter(self, qualified_name: str) -> None:
        if qualified_name not in self._seen_parameters:
            self._seen_parameters.add(qualified_name)
            self.parameter_order.append(qualified_name)


def recovering_tracer_class(base: type[fx.Tracer]) -> type[RecoveringTracer]:
    """``RecoveringTracer`` behaviour over a (possibly custom) ``Tracer`` class."""
    if issubclass(base, RecoveringTracer):
        return base
    if base is fx.Tracer:
        return RecoveringTracer
    return type(f"Recovering{base.__name__}", (RecoveringTracer, base), {})


def _describe_condition(frame: Any) -> str:
    opname = _calling_instruction(frame)
    if opname is not None and opname.startswith(("CALL", "PRECALL")):
        return "a traced value is compared inside a call such as max() or min()"
    return "the condition is a traced value"


def _always_leaves(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Break, ast.Continue))


def _active_tracer(proxy: fx.Proxy) -> RecoveringTracer | None:
    tracer = proxy.tracer
    return tracer if isinstance(tracer, RecoveringTracer) else None


def _recording(kind: str, detail: str, result: Any) -> Callable[..., Any]:
    """A Proxy dunder that records ``kind`` and returns ``result`` to keep tracing."""

    def dunder(self: fx.Proxy, *_args: Any) -> Any:
        tracer = _active_tracer(self)
        if tracer is None:
            raise TypeError(f"{detail} is not supported on a torch.fx Proxy")
        if kind == "conversion" and not tracer.is_python_conversion():
            # As a plain Proxy does: torch's argument parser then dispatches the call.
            raise TypeError(f"'Proxy' object cannot be used as a number ({detail})")
        tracer.record_failure(kind, detail=detail)
        return result

    return dunder


class PlainLengthError(RuntimeError):
    """A plain Proxy's ``len`` error, raised where torch's C code asks a Proxy's length. Its
    own class, so that a trace it ends reports it as the ``len`` failure (FX002) plain
    torch.fx stops at (``torch.tensor([x.shape[0] - 1])`` does not clear it)."""


def _plain_length_message() -> str:
    """What a plain Proxy raises for ``len()``, in this torch's words (read at import, before
    any patch; the method ignores its Proxy)."""
    try:
        fx.Proxy.__len__(None)  # type: ignore[arg-type]
    except RuntimeError as error:
        return str(error)
    return "'len' is not supported in symbolic tracing by default."


_PLAIN_LENGTH_MESSAGE = _plain_length_message()


def _length(self: fx.Proxy) -> int:
    tracer = _active_tracer(self)
    if tracer is None:
        raise RuntimeError(_PLAIN_LENGTH_MESSAGE)
    if tracer.is_length_hint_after_iteration():
        # list(proxy) / f(*proxy) ask for a length hint after iterating; a TypeError tells
        # CPython there is none. The iteration was already reported.
        raise TypeError("a traced value has no length hint")
    if not tracer.is_python_length():
        # As a plain Proxy does: torch's C code clears the error where it has another way
        # (indexing dispatches to __torch_function__) and raises it where plain tracing
        # stops.
        raise PlainLengthError(_PLAIN_LENGTH_MESSAGE)
    tracer.record_failure("len")
    return 1


@contextlib.contextmanager
def proxy_patches() -> Iterator[None]:
    """Give ``Proxy`` recording versions of the dunders that plain tracing fails on."""
    patches: dict[str, Any] = {
        "__len__": _length,
        "__int__": _recording("conversion", "int()", 1),
        "__float__": _recording("conversion", "float() or a math function", 1.0),
        "__complex__": _recording("conversion", "complex()", 1j),
        "__index__": _recording("conversion", "An integer conversion (range(), indexing)", 1),
        "__setitem__": _recording("mutation", "x[...] = value", None),
        "__delitem__": _recording("mutation", "del x[...]", None),
    }
    originals = {name: fx.Proxy.__dict__.get(name) for name in patches}
    try:
        for name, method in patches.items():
            setattr(fx.Proxy, name, method)
        yield
    finally:
        for name, original in originals.items():
            if original is None:
                delattr(fx.Proxy, name)
            else:
                setattr(fx.Proxy, name, original)
