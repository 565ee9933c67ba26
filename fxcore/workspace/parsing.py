"""Parsing workspace source with ``ast``, where every way Python's parser gives up is a
``SyntaxError``.

``ast.parse`` raises ``RecursionError`` (or ``MemoryError``) for a deeply nested or very long
expression (``x = 1+1+...`` with 100,000 terms) and, before Python 3.12, ``ValueError`` for a
NUL byte. Those are about one file: here they become ``SyntaxError``s (``SourceTooComplex`` for
the first two), so every caller that handles a file that does not parse handles them too, and
one such file never ends a CLI run or a server's publishing.

Every parse of the host process goes through ``ast_of``, one at a time: the CLI and the server
parse files in threads, and CPython 3.11 keeps the AST constructor's recursion depth in state
shared by all threads, so two parses at once can end in "SystemError: AST constructor recursion
depth mismatch" (CPython gh-106905), a failure of a file that parses.
"""

from __future__ import annotations

import ast
import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

_ONE_PARSE_AT_A_TIME = threading.Lock()


def ast_of(text: str, filename: str = "<unknown>", mode: str = "exec", flags: int = 0) -> Any:
    """``ast.parse(text, filename, mode)`` (``compile`` with ``ast.PyCF_ONLY_AST | flags``
    where flags are given), one parse at a time."""
    with _ONE_PARSE_AT_A_TIME:
        if not flags:
            return ast.parse(text, filename, mode)
        return compile(text, filename, mode, ast.PyCF_ONLY_AST | flags, dont_inherit=True)


class SourceTooComplex(SyntaxError):
    """Source that Python's parser gives up on although it may be valid Python."""


@contextlib.contextmanager
def _as_syntax_error() -> Iterator[None]:
    try:
        yield
    except (RecursionError, MemoryError) as error:
        raise SourceTooComplex(
            "the source is too deeply nested or too long for Python's parser "
            f"({type(error).__name__})") from None
    except ValueError as error:  # a NUL byte, before Python 3.12
        raise SyntaxError(str(error)) from None


def parse_module(text: str) -> ast.Module:
    """``ast.parse(text)``; raises ``SyntaxError`` for any text it cannot give a tree for."""
    with _as_syntax_error():
        return ast_of(text)


def parse_expression(text: str) -> ast.Expression:
    """``ast.parse(text, mode="eval")``, raising as ``parse_module`` does."""
    with _as_syntax_error():
        return ast_of(text, mode="eval")


@dataclass(frozen=True)
class Outline:
    """What planning needs of a file's top level, from one ``ast`` parse."""

    #: (name, first line, last line) of each top-level class.
    classes: tuple[tuple[str, int, int], ...]
    functions: frozenset[str]


def outline(source: str) -> Outline | None:
    """The file's top-level classes and functions; None when it does not parse."""
    try:
        tree = parse_module(source)
    except SyntaxError:
        return None
    return Outline(
        classes=tuple(
            (node.name, node.lineno, node.end_lineno or node.lineno)
            for node in tree.body
            if isinstance(node, ast.ClassDef)
        ),
        functions=frozenset(
            node.name
            for node in tree.body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        ),
    )
