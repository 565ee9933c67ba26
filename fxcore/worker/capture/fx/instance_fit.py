"""FX105: whether the error that ended a trace involves a traced value, or only the instance
fx-lsp built (its defaults or guessed arguments): ``'NoneType' object is not callable`` for an
``act=None`` default, ``torch.cat`` of the empty list an ``n_blocks=0`` default makes, an
attribute a default left unset. Such an error says nothing about torch.fx: it is reported as
"the instance does not fit" and the next instance is tried (``fxcore.worker.pipeline.job``).

Decided from the exception and its traceback after the fact, without running user code again:

- its message names a ``Proxy`` (Python's own errors name their operands' types: ``'Proxy'
  object is not iterable``, ``unsupported operand type(s) for +: 'NoneType' and 'Proxy'``);
- it was raised inside torch.fx itself (its checks of what is traced: a module that is not
  a submodule);
- a function the user's innermost line called holds a traced value among its locals (one
  level into lists, tuples and dicts): it was given one;
- else the user's line raised it itself. An explicit ``raise`` involves a traced value when
  its frame holds one; a call of a non-callable is about the callee, which the message names;
  any other operation (a call, an attribute, a subscript, an operator) involves a traced value
  when a local variable its operands name holds one (one level into containers), and an
  operation other than a call that names no local at all (``-np.abs``: globals and constants
  alone) is the code's own error, raised whatever the instance. Its operands'
  values are gone with the frame's stack, so the names stand for them: those inside a
  comprehension or lambda are left out, as only the comprehension's result reaches the
  operation (``torch.cat([block(x) for block in self.blocks])`` over no blocks is given an
  empty list, not ``x``).
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable, Iterable
from types import FrameType, TracebackType
from typing import Any

import torch
from torch import fx

from fxcore.worker.job.job_context import describe_exception
from fxcore.worker.source.locate import instruction_position

#: torch.fx's own package: an error raised there is one of its checks of what is traced.
_TORCH_FX_DIR = os.path.join(os.path.dirname(os.path.abspath(torch.__file__)), "fx") + os.sep

TreeOf = Callable[[str], "ast.Module | None"]


def involves_traced_value(error: BaseException, is_workspace_path: Callable[[str], bool],
                          tree_of: TreeOf) -> bool:
    """True unless the error ended the trace where no traced value is involved (see the
    module's documentation); True too when that cannot be told (no workspace frame), and
    for running out of memory or an exit, which say how the code runs, not how it was built."""
    if not isinstance(error, Exception) or isinstance(error, MemoryError):
        return True
    if "Proxy" in describe_exception(error):
        return True
    frames = _traceback_frames(error.__traceback__)
    user = [index for index, (frame, _) in enumerate(frames)
            if is_workspace_path(frame.f_code.co_filename)]
    if not user:
        return True  # raised before the workspace's code ran: torch.fx setting up the trace
    below = frames[user[-1] + 1:]
    if below:
        deepest = os.path.abspath(below[-1][0].f_code.co_filename)
        # torch.fx's own wrappers in between (its ``__getattr__`` of modules) keep caches of
        # traced values that are no operand of the failing call: only the callees' count.
        return deepest.startswith(_TORCH_FX_DIR) or any(
            _holds_proxy(frame.f_locals.values()) for frame, _ in below
            if not os.path.abspath(frame.f_code.co_filename).startswith(_TORCH_FX_DIR))
    frame, lasti = frames[user[-1]]
    return _operation_involves_proxy(error, frame, lasti, tree_of)


def _traceback_frames(tb: TracebackType | None) -> list[tuple[FrameType, int]]:
    """(frame, instruction offset) of each traceback entry, outermost first."""
    frames = []
    while tb is not None:
        frames.append((tb.tb_frame, tb.tb_lasti))
        tb = tb.tb_next
    return frames


def _operation_involves_proxy(error: BaseException, frame: FrameType, lasti: int,
                              tree_of: TreeOf) -> bool:
    """Whether the operation of the user's line that raised ``error`` had a traced operand."""
    node = _failing_node(frame, lasti, tree_of)
    if node is None or isinstance(node, ast.Raise):
        # An explicit raise (or an operation not found): whatever the frame holds may be in it.
        return _holds_proxy(frame.f_locals.values())
    if isinstance(node, ast.Call):
        if isinstance(error, TypeError) and "object is not callable" in str(error):
            return False  # about the callee, whose type the message names: not a Proxy
        operands: list[ast.AST] = [*node.args, *node.keywords]
    else:
        operands = [node]
    names = [name for name in _operand_names(operands) if name in frame.f_locals]
    if not names and not isinstance(node, ast.Call):
        # An operation on globals and constants alone (``-np.abs``, the ufunc itself) raises
        # for every instance and every input: the code's own error, not the instance's.
        return True
    return _holds_proxy(frame.f_locals[name] for name in names)


def _failing_node(frame: FrameType, lasti: int, tree_of: TreeOf) -> ast.AST | None:
    """The expression or statement whose source range is exactly the failing instruction's."""
    tree = tree_of(frame.f_code.co_filename)
    position = instruction_position(frame.f_code, lasti, frame.f_lineno)
    if tree is None or position.column is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.expr, ast.Raise)) \
                and (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset) == (
                    position.line, position.column, position.end_line, position.end_column):
            return node
    return None


def _operand_names(nodes: Iterable[ast.AST]) -> set[str]:
    """The names the expressions read in their own scope: inside a comprehension only its
    first iterable, none inside a lambda."""
    names: set[str] = set()
    pending = list(nodes)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            pending.append(node.generators[0].iter)
        elif not isinstance(node, ast.Lambda):
            pending.extend(ast.iter_child_nodes(node))
    return names


def _holds_proxy(values: Iterable[Any]) -> bool:
    """A traced value among ``values`` or directly inside one of their lists, tuples, sets
    or dicts."""
    for value in values:
        if isinstance(value, fx.Proxy):
            return True
        if isinstance(value, dict):
            inner: Iterable[Any] = [*value.keys(), *value.values()]
        elif isinstance(value, (list, tuple, set, frozenset)):
            inner = value
        else:
            continue
        if any(isinstance(item, fx.Proxy) for item in inner):
            return True
    return False
