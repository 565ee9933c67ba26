"""Libraries that cannot run on a traced value (FX008): einops and einx look at a tensor's
type and shape in Python, which a torch.fx Proxy does not have.

Shared by the worker, which decides the code from the failing frames and words the advice,
and the fix planner, which offers the same fix: both find the user's call from the file's
module-level imports (``library_calls``), so the message and the quick fix never disagree.
Pure ``ast``: no workspace code runs here.
"""

from __future__ import annotations

import ast
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from fxcore.model.results import Range
from fxcore.workspace.parsing import parse_module
from fxcore.workspace.paths import split_lines

#: Top-level packages whose frames below the user's make a failure FX008.
LIBRARIES = frozenset({"einops", "einx"})

#: The functions of each library that take and give one tensor: recorded as one graph node
#: (``torch.fx.wrap``, ``autowrap_modules``) they trace and compute what they did. Others
#: give Python values the forward goes on to use (``pack`` a tuple, ``parse_shape`` a dict);
#: einx is not offered a fix, as its functions were not checked with torch.fx.
TENSOR_FUNCTIONS: dict[str, frozenset[str]] = {
    "einops": frozenset({"rearrange", "reduce", "repeat", "einsum"}),
}


def library_of(path: str) -> str | None:
    """The library of ``LIBRARIES`` whose package holds the file ``path``, or None: the
    nearest enclosing folder named as a library that is a regular package. Not the
    ``__init__.py`` chain alone, which stops at a namespace subpackage (einx 0.4 keeps its
    code in ``einx/_src/``, which has none)."""
    folder = os.path.dirname(os.path.abspath(path))
    while True:
        name = os.path.basename(folder)
        if name in LIBRARIES and os.path.isfile(os.path.join(folder, "__init__.py")):
            return name
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def traced_library(paths: Sequence[str], is_workspace: Callable[[str], bool]) -> str | None:
    """The library a failure happened in: one of its frames is among those the user's
    innermost frame called (``paths``: a failure's stack, outermost first)."""
    below = max((index for index, path in enumerate(paths) if is_workspace(path)), default=-1)
    for path in paths[below + 1:]:
        if not is_workspace(path) and (library := library_of(path)) is not None:
            return library
    return None


@dataclass(frozen=True)
class LibraryCall:
    """A call of a library function in a file, as the file spells it."""

    #: The call expression: 1-based lines and character columns, end exclusive.
    range: Range
    library: str
    #: The library's name of the function: ``rearrange``.
    function: str
    #: The module-level name the file calls it by (``from einops import rearrange as r``:
    #: ``r``); None when it is called as an attribute of the library (``einops.rearrange``).
    imported_name: str | None

    @property
    def has_fix(self) -> bool:
        """Whether recording the call as one graph node makes it trace."""
        return self.function in TENSOR_FUNCTIONS.get(self.library, frozenset())


def _imports(tree: ast.Module) -> tuple[dict[str, tuple[str, str]], dict[str, str]]:
    """(name -> (library, function), module name -> library) bound by the module-level
    imports: ``from einops import rearrange``, ``import einops as E``."""
    functions: dict[str, tuple[str, str]] = {}
    modules: dict[str, str] = {}
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom) and statement.level == 0 and statement.module:
            library = statement.module.split(".")[0]
            if library in LIBRARIES:
                for alias in statement.names:
                    if alias.name != "*":
                        functions[alias.asname or alias.name] = (library, alias.name)
        elif isinstance(statement, ast.Import):
            for alias in statement.names:
                library = alias.name.split(".")[0]
                if library not in LIBRARIES:
                    continue
                if alias.asname is None:
                    modules[library] = library  # `import einops.layers.torch` binds einops
                elif alias.name == library:
                    modules[alias.asname] = library
    return functions, modules


def calls_in(tree: ast.Module, lines: Sequence[str]) -> tuple[LibraryCall, ...]:
    """Every call of a library function through the module-level imports of ``tree``
    (``lines``: its source lines, for character columns)."""
    functions, modules = _imports(tree)
    if not functions and not modules:
        return ()

    def column(line: int, offset: int) -> int:
        # ast's columns count UTF-8 bytes; fx-lsp's count characters, from 1.
        return len(lines[line - 1].encode()[:offset].decode(errors="replace")) + 1

    found: list[LibraryCall] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id in functions:
            library, function = functions[func.id]
            imported_name: str | None = func.id
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) \
                and func.value.id in modules:
            library, function, imported_name = modules[func.value.id], func.attr, None
        else:
            continue
        end_line = node.end_lineno or node.lineno
        where = Range(node.lineno, column(node.lineno, node.col_offset), end_line,
                      column(end_line, node.end_col_offset or 0))
        found.append(LibraryCall(where, library, function, imported_name))
    return tuple(found)


def library_calls(source: str) -> tuple[LibraryCall, ...] | None:
    """``calls_in`` of a file's text; None when it does not parse."""
    try:
        tree = parse_module(source)
    except SyntaxError:
        return None
    return calls_in(tree, split_lines(source))


def call_at(calls: Sequence[LibraryCall] | None, where: Range) -> LibraryCall | None:
    """The library call a failure is reported on (its range is the call expression)."""
    return next((call for call in calls or () if call.range == where), None)
