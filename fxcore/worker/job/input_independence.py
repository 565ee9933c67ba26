"""Whether an error ``forward`` raised would be raised whatever its inputs, decided from what the
failing lines read rather than by trying more shapes: a class may only be told "forward raises
on every input tried" (FX408, FX509, FX606) where no input could change the outcome.

An error is input-independent when, in every frame of the user's code between ``forward`` and
the error (``user_frames``), the conditions the failing statement sits under (``if``, ``while``,
a ``for`` loop's iterable, a conditional expression around it) read nothing derived from the
function's arguments, and the innermost statement itself reads nothing derived from them
either: ``if not self.enabled: raise NotImplementedError(...)`` (a value the class set itself),
``window = scipy.signal.blackmanharris(64)`` (a function the installed package lacks). An error
on a statement that reads the inputs (``torch.topk(logits, self.top_k)``, ``b, n, d =
x.shape``, ``torch.istft(spec, ...)``) may well be the inputs' fault, which another input, a
parent's, a complex one or one of another rank, would not meet; so may any statement inside a
branch or loop on them.

A name is derived from the arguments when it is one (``self`` and ``cls`` apart) or is bound
from an expression that reads one (assignments, augmented assignments, ``for`` targets,
``with ... as``, walrus), to a fixed point over the function's body. Attributes set on
``self`` inside the frame are not followed: those are read as the class's own values.
"""

from __future__ import annotations

import ast
import functools
import linecache
import os
import sysconfig
from collections.abc import Iterator
from types import FrameType, TracebackType

from fxcore.worker.source.locate import is_plumbing

_LIBRARY_DIRS = tuple(os.path.abspath(path) + os.sep for path in {
    sysconfig.get_paths().get(key, "") for key in ("purelib", "platlib", "stdlib",
                                                   "platstdlib")} if path)
_Scope = ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda


def raised_whatever_the_inputs(error: BaseException) -> bool:
    """True when no input ``forward`` could be given changes that ``error`` is raised (see
    the module's documentation); False when it may, or where a frame's source cannot be
    read: a class is never told it always fails on what could not be read."""
    frames = list(user_frames(error.__traceback__))
    if not frames:
        return False
    for depth, (frame, line) in enumerate(frames):
        function = _function_node(frame)
        if function is None:
            return False
        found = _statement_at(function, line)
        if found is None:
            return False
        statement, conditions = found
        innermost = depth == len(frames) - 1
        read = [*conditions, statement] if innermost else conditions
        derived = _derived_names(function)
        if any(_reads(node, derived) for node in read):
            return False
    return True


def user_frames(tb: TracebackType | None) -> Iterator[tuple[FrameType, int]]:
    """The traceback's frames of the user's own code, outermost first, with their lines:
    neither fx-lsp's nor torch's machinery, the standard library nor installed packages."""
    while tb is not None:
        filename = os.path.abspath(tb.tb_frame.f_code.co_filename)
        if not is_plumbing(filename) and not filename.startswith(_LIBRARY_DIRS):
            yield tb.tb_frame, tb.tb_lineno
        tb = tb.tb_next


def _function_node(frame: FrameType) -> _Scope | None:
    """The definition of the function ``frame`` runs, from the source the worker imported."""
    code = frame.f_code
    tree = _parsed(code.co_filename)
    if tree is None:
        return None
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                and node.name == code.co_name:
            # A decorated function's code starts at its first decorator.
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            if code.co_firstlineno in (first, node.lineno):
                return node
    return None


def _parsed(filename: str) -> ast.Module | None:
    text = "".join(linecache.getlines(filename))
    return _parsed_text(text) if text else None


@functools.lru_cache(maxsize=32)
def _parsed_text(text: str) -> ast.Module | None:
    """Parsed once per text: every input tried may have raised in the same file."""
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None


def _statement_at(function: _Scope, line: int) -> tuple[ast.AST, list[ast.AST]] | None:
    """The innermost statement of ``function``'s own body (not a nested definition's) that
    spans ``line``, and the conditions it runs under there, outermost first."""
    body = function.body if isinstance(function.body, list) else [function.body]
    return _find(body, line, [])


def _find(statements: list[ast.stmt], line: int, conditions: list[ast.AST]
          ) -> tuple[ast.AST, list[ast.AST]] | None:
    for statement in statements:
        if not statement.lineno <= line <= (statement.end_lineno or statement.lineno):
            continue
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return None
        guards = {ast.If: "test", ast.While: "test", ast.For: "iter", ast.AsyncFor: "iter"}
        field = guards.get(type(statement))
        inner = [*conditions, getattr(statement, field)] if field else conditions
        for block in ("body", "orelse", "finalbody"):
            found = _find(getattr(statement, block, []) or [], line, inner)
            if found is not None:
                return found
        for handler in getattr(statement, "handlers", []) or []:
            found = _find(handler.body, line, inner)
            if found is not None:
                return found
        if isinstance(statement, ast.Match):
            for case in statement.cases:
                found = _find(case.body, line, [*inner, statement.subject])
                if found is not None:
                    return found
        # The statement itself, under the conditional expressions around the line.
        return statement, conditions + _inline_conditions(statement)
    return None


def _inline_conditions(statement: ast.AST) -> list[ast.AST]:
    """The tests of the conditional expressions and boolean operators in ``statement``
    (``a if cond else b``, ``cond and f()``): which part of it runs may depend on them."""
    tests: list[ast.AST] = []
    for node in ast.walk(statement):
        if isinstance(node, ast.IfExp):
            tests.append(node.test)
        elif isinstance(node, ast.BoolOp):
            tests.extend(node.values[:-1])
    return tests


def _derived_names(function: _Scope) -> set[str]:
    """The names of ``function`` derived from its arguments (see the module's docs)."""
    arguments = function.args
    names = [a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)]
    names += [a.arg for a in (arguments.vararg, arguments.kwarg) if a is not None]
    derived = {name for name in names if name not in ("self", "cls")}
    bindings = list(_bindings(function))
    changed = True
    while changed:
        changed = False
        for targets, value in bindings:
            if value is not None and _reads(value, derived):
                new = {name for target in targets for name in _bound_names(target)} - derived
                if new:
                    derived |= new
                    changed = True
    return derived


def _bindings(function: _Scope) -> Iterator[tuple[list[ast.AST], ast.AST | None]]:
    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            yield node.targets, node.value
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            yield [node.target], node.value
            if isinstance(node, ast.AugAssign):
                yield [node.target], node.target
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            yield [node.target], node.iter
        elif isinstance(node, ast.NamedExpr):
            yield [node.target], node.value
        elif isinstance(node, (ast.With, ast.AsyncWith)):
            for item in node.items:
                if item.optional_vars is not None:
                    yield [item.optional_vars], item.context_expr


def _bound_names(target: ast.AST) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _bound_names(element)
    elif isinstance(target, ast.Starred):
        yield from _bound_names(target.value)


def _reads(node: ast.AST, names: set[str]) -> bool:
    return any(isinstance(child, ast.Name) and child.id in names for child in ast.walk(node))
