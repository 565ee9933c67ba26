"""The optional package a class needs and this environment lacks, for the note of a class no
argument set builds: a library that imports an optional dependency inside ``try`` (``try: from
peft import get_peft_model`` ``except ImportError: get_peft_model = None``) imports fine, and
its class's constructor then fails on whatever the ``except`` left, with every argument set.
Saying "the constructor needs arguments" there sends the user to configure arguments that
cannot help; the package is named instead, in Python's own words ("No module named 'peft'"),
which is also how the library benchmark counts such classes apart
(``benchmarks/fidelity/no_verdict_causes.py``).

Read from the class's module source with ``ast`` and ``importlib.util.find_spec`` (which
imports nothing but the parent packages of a dotted name); nothing of the module is run.
"""

from __future__ import annotations

import ast
import importlib.util
import inspect
import sys
from collections.abc import Iterable

from fxcore.worker.building.called_checks import own_init
from fxcore.worker.source.function_trees import function_tree


def optional_package_note(cls: type, errors: Iterable[BaseException]) -> str:
    """A sentence naming the package ``cls`` needs and that is not installed, or ``""``:
    the package a rejection's ``ModuleNotFoundError`` names, else one its module imports
    in a ``try`` whose names (or a flag the ``except`` sets) ``__init__`` reads."""
    package = next((error.name.split(".")[0] for error in errors
                    if isinstance(error, ModuleNotFoundError) and error.name), None)
    if package is None:
        read = _names_read_by_init(cls)
        package = next((name for name, bound in _missing_optional_imports(cls).items()
                        if bound & read), None)
    if package is None:
        return ""
    return (f"It needs the optional package '{package}', which is not installed here (No "
            f"module named '{package}'): install it to check the class. ")


def _missing_optional_imports(cls: type) -> dict[str, set[str]]:
    """Top-level package -> the names its guarded imports and their ``except`` handlers
    bind, for the packages the class's module imports inside a ``try`` and that are not
    installed."""
    module = sys.modules.get(cls.__module__)
    try:
        tree = ast.parse(inspect.getsource(module)) if module is not None else None
    except (OSError, TypeError, SyntaxError):
        return {}
    missing: dict[str, set[str]] = {}
    for node in ast.walk(tree) if tree is not None else []:
        if not isinstance(node, ast.Try):
            continue
        handled = {target.id for handler in node.handlers for statement in handler.body
                   for target in ast.walk(statement)
                   if isinstance(target, ast.Name) and isinstance(target.ctx, ast.Store)}
        for statement in node.body:
            for package, bound in _imported(statement):
                if not _installed(package):
                    missing.setdefault(package, set()).update(bound | handled)
    return missing


def _imported(statement: ast.stmt) -> list[tuple[str, set[str]]]:
    """(top-level package, names bound) of an absolute import statement."""
    if isinstance(statement, ast.Import):
        return [(alias.name.split(".")[0], {(alias.asname or alias.name).split(".")[0]})
                for alias in statement.names]
    if isinstance(statement, ast.ImportFrom) and statement.level == 0 and statement.module:
        return [(statement.module.split(".")[0],
                 {alias.asname or alias.name for alias in statement.names})]
    return []


def _installed(package: str) -> bool:
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False


def _names_read_by_init(cls: type) -> set[str]:
    """The names the ``__init__`` instances of ``cls`` run first reads."""
    found = own_init(cls)
    tree = function_tree(found[0]) if found is not None else None
    return {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)} if tree else set()
