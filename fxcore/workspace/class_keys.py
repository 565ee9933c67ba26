"""What each top-level class's verdicts depend on in its own file's text, read with ``ast``:
the key under which a class's verdicts traced from one text serve another
(``fxcore.host.class_cache``).

A class's key is made of the source of the module-level statements it may meet, each that
defines code run after the import (a function, a class, a lambda: lines a verdict may name)
with its first line counted from the class's first line (a block moved as a whole keeps its
key; the verdicts reused are moved with it, ``fxcore.model.line_shift``):

- the class itself, and every module-level definition or assignment it reaches by name,
  transitively (a helper function, a constant, a base class);
- every module-level statement that is not a plain definition, since running it on import
  may change anything (imports, expression statements, ``if`` blocks, augmented
  assignments, an assignment or a definition whose header calls something), and what it
  reaches;
- the definitions that name the class (``Block.forward = patched``, a builder function).

``if __name__ == "__main__":`` blocks do not run on import and count for no class. A file
that reaches its names by other ways than their names (``globals()``, ``eval``,
``sys.modules``, a star import, a module ``__getattr__``), that is written for a GPU (one
class's device decides how the whole file is imported), or that binds a class's name twice
has no keys: its classes are always traced again.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

from fxcore.model.gpu_marks import GPU_TEXT
from fxcore.workspace.discovery import is_main_guard

#: Names through which code reaches module globals without naming them.
_DYNAMIC_NAMES = frozenset({"globals", "locals", "vars", "eval", "exec", "__import__"})
#: Attributes that do the same (``sys.modules``, frames' globals, ``importlib``).
_DYNAMIC_ATTRIBUTES = frozenset({"modules", "import_module", "_getframe", "currentframe",
                                 "f_globals", "f_back", "__globals__"})
#: Module functions that answer for names the module does not bind.
_MODULE_HOOKS = frozenset({"__getattr__", "__dir__"})


@dataclass(frozen=True)
class ClassKey:
    """One class's key and the first line (its first decorator's, else its ``class``'s) that
    the lines in the key are counted from."""

    digest: str
    first_line: int


def _first_line(statement: ast.stmt) -> int:
    decorators = getattr(statement, "decorator_list", [])
    return min([statement.lineno, *(decorator.lineno for decorator in decorators)])


def _bound_names(statement: ast.stmt) -> list[str]:
    """The names a plain definition binds."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [statement.name]
    targets = statement.targets if isinstance(statement, ast.Assign) \
        else [statement.target] if isinstance(statement, ast.AnnAssign) else []
    return [target.id for target in targets if isinstance(target, ast.Name)]


def _header(statement: ast.stmt) -> Iterator[ast.AST]:
    """What runs when a definition statement runs: its decorators, defaults and bases, or an
    assignment's value; a class's body runs too, but a class is a definition all the same."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)):
        yield from statement.decorator_list
        yield from statement.args.defaults
        yield from (default for default in statement.args.kw_defaults if default is not None)
    elif isinstance(statement, ast.ClassDef):
        yield from statement.decorator_list
        yield from statement.bases
        yield from statement.keywords
    elif isinstance(statement, (ast.Assign, ast.AnnAssign)) and statement.value is not None:
        yield statement.value


def _is_definition(statement: ast.stmt) -> bool:
    """A plain definition: it binds names and, when the module runs it, calls nothing."""
    if isinstance(statement, ast.Assign) and not all(
            isinstance(target, ast.Name) for target in statement.targets):
        return False
    if isinstance(statement, ast.AnnAssign) and not isinstance(statement.target, ast.Name):
        return False
    if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                  ast.Assign, ast.AnnAssign)):
        return False
    return not any(isinstance(node, (ast.Call, ast.Await, ast.Yield, ast.YieldFrom,
                                     ast.NamedExpr))
                   for part in _header(statement) for node in ast.walk(part))


def _mentioned(statement: ast.stmt) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(statement):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            names.update(node.names)
    return names


def _holds_code(statement: ast.stmt) -> bool:
    """Whether a statement defines code that runs after the import (a function, a lambda, a
    class), whose lines a trace may meet."""
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                 ast.ClassDef)) for node in ast.walk(statement))


def _reaches_by_other_ways(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in _DYNAMIC_NAMES:
            return True
        if isinstance(node, ast.Attribute) and node.attr in _DYNAMIC_ATTRIBUTES:
            return True
        if isinstance(node, ast.ImportFrom) and any(alias.name == "*" for alias in node.names):
            return True
    return any(isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef))
               and statement.name in _MODULE_HOOKS for statement in tree.body)


def class_keys(text: str, tree: ast.Module) -> dict[str, ClassKey]:
    """The key of each top-level class of ``text`` (parsed as ``tree``) whose verdicts may be
    reused; none for a file whose classes must always be traced again."""
    if GPU_TEXT.search(text) or _reaches_by_other_ways(tree):
        return {}
    lines = text.splitlines(keepends=True)
    statements = [statement for statement in tree.body
                  if not (isinstance(statement, ast.If) and is_main_guard(statement.test))]
    mentioned = [_mentioned(statement) for statement in statements]
    definition = [_is_definition(statement) for statement in statements]
    binders: dict[str, list[int]] = {}
    for index, statement in enumerate(statements):
        if definition[index]:
            for name in _bound_names(statement):
                binders.setdefault(name, []).append(index)
    always = {index for index, plain in enumerate(definition) if not plain}

    def reached(start: set[int]) -> set[int]:
        found, pending = set(start), list(start)
        while pending:
            for name in mentioned[pending.pop()]:
                for index in binders.get(name, ()):
                    if index not in found:
                        found.add(index)
                        pending.append(index)
        return found

    # Reached from every statement that always runs: part of every class's key.
    shared = reached(always)
    keys: dict[str, ClassKey] = {}
    for index, statement in enumerate(statements):
        if not isinstance(statement, ast.ClassDef) \
                or binders.get(statement.name) != [index]:
            continue  # a name bound twice, or by a class whose header calls something
        naming = {other for other, names in enumerate(mentioned)
                  if statement.name in names and other != index}
        first = _first_line(statement)
        digest = hashlib.sha256()
        for counted in sorted(shared | reached({index}) | naming):
            segment = statements[counted]
            start = _first_line(segment)
            source = "".join(lines[start - 1:segment.end_lineno or segment.lineno])
            # Only code that runs later (a function's, a class's) may show in a verdict
            # (a frame, a graph node's line): where the rest is does not matter.
            offset = start - first if _holds_code(segment) else ""
            digest.update(f"{offset}\0{source}\0".encode("utf-8", "surrogatepass"))
        keys[statement.name] = ClassKey(digest.hexdigest(), first)
    return keys
