"""Constructor calls with literal arguments written anywhere in a workspace.

READMEs, docs, docstrings, doctests, tests, examples and ``if __name__ == "__main__":``
blocks usually show how a model is built: ``ViT(image_size=256, patch_size=32, dim=1024)``.
This module reads them statically, with ``ast`` only: the file holding a call is never run,
so it is safe in the CLI and server processes. A call counts when every argument is a literal
(``ast.literal_eval``) or a call of the same kind (``GPT(GPTConfig(n_layer=2))``); the
worker evaluates the nested calls against the class's module (``fxcore.job``).
"""

from __future__ import annotations

import ast
import os
import re
import threading
from dataclasses import dataclass, field

from fxcore.file_access import read_text
from fxcore.parsing import parse_module
from fxcore.workspace import SKIPPED_FOLDERS

#: Markdown fenced code blocks that hold Python.
_MARKDOWN_BLOCK = re.compile(r"^```(?:python|py|python3)?[ \t]*\n(.*?)^```", re.M | re.S)
#: Markdown files read besides the Python ones.
_MARKDOWN_SUFFIXES = (".md", ".markdown", ".rst")
_DOCTEST_LINE = re.compile(r"^\s*(?:>>>|\.\.\.) ?(.*)$")


@dataclass(frozen=True)
class CallSite:
    """``Class(*args, **kwargs)`` as written at ``site`` (``README.md:42``): each argument
    as its source text, a literal or a nested literal call."""

    site: str
    args: tuple[str, ...] = ()
    kwargs: tuple[tuple[str, str], ...] = ()


def is_literal_call_argument(node: ast.expr) -> bool:
    """A literal, or a call of a CapWords name whose arguments are all such."""
    if isinstance(node, ast.Call):
        return _called_name(node) is not None and all(
            is_literal_call_argument(argument) for argument in node.args
        ) and all(keyword.arg is not None and is_literal_call_argument(keyword.value)
                  for keyword in node.keywords)
    try:
        ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return True


def _called_name(call: ast.Call) -> str | None:
    function = call.func
    name = function.id if isinstance(function, ast.Name) else (
        function.attr if isinstance(function, ast.Attribute) else None)
    return name if name and name[:1].isupper() else None


def calls_in_source(text: str, site_of: str, first_line: int = 1) -> list[tuple[str, CallSite]]:
    """(class name, call site) for every literal constructor call in Python ``text``."""
    try:
        tree = parse_module(text)
    except SyntaxError:
        return []
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _called_name(node)
        if name is None or not (node.args or node.keywords):
            continue
        if not is_literal_call_argument(node):
            continue
        found.append((name, CallSite(
            site=f"{site_of}:{first_line + node.lineno - 1}",
            args=tuple(ast.unparse(argument) for argument in node.args),
            kwargs=tuple((keyword.arg or "", ast.unparse(keyword.value))
                         for keyword in node.keywords),
        )))
    found += _doctest_calls(tree, site_of, first_line)
    return found


def _doctest_calls(tree: ast.AST, site_of: str, first_line: int) -> list[tuple[str, CallSite]]:
    """Calls in the ``>>>`` examples of docstrings."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                 ast.AsyncFunctionDef)):
            continue
        docstring = ast.get_docstring(node, clean=False)
        if not docstring or ">>>" not in docstring:
            continue
        start = node.body[0].lineno if node.body else 1
        for offset, line in enumerate(docstring.splitlines()):
            match = _DOCTEST_LINE.match(line)
            if match:
                found += calls_in_source(match.group(1), site_of, first_line + start - 1
                                         + offset)
    return found


def calls_in_markdown(text: str, site_of: str) -> list[tuple[str, CallSite]]:
    found = []
    for block in _MARKDOWN_BLOCK.finditer(text):
        first_line = text.count("\n", 0, block.start(1)) + 1
        found += calls_in_source(block.group(1), site_of, first_line)
    return found


@dataclass
class CallSiteIndex:
    """Every literal constructor call of one workspace, by class name; rebuilt when a file
    of the workspace changes (by size and modification time)."""

    root: str
    calls: dict[str, list[CallSite]] = field(default_factory=dict)
    signature: tuple[tuple[str, int, int], ...] = ()

    def for_class(self, name: str) -> CallSite | None:
        """The first call of ``name`` (by file, then line): the one a reader meets first."""
        sites = self.calls.get(name)
        return sites[0] if sites else None


def _workspace_files(root: str) -> list[str]:
    """Python and Markdown files below ``root``, skipping what ``python_files`` skips, in one
    walk (this runs for every job, to see whether the index is still current)."""
    files = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [name for name in subfolders
                         if not name.startswith(".") and name not in SKIPPED_FOLDERS]
        files += [os.path.join(folder, name) for name in names
                  if name.endswith(".py") or name.lower().endswith(_MARKDOWN_SUFFIXES)]
    return sorted(files)


def _signature(files: list[str]) -> tuple[tuple[str, int, int], ...]:
    entries = []
    for path in files:
        try:
            status = os.stat(path)
        except OSError:
            continue
        entries.append((path, status.st_size, status.st_mtime_ns))
    return tuple(entries)


def build_index(root: str) -> CallSiteIndex:
    files = _workspace_files(root)
    index = CallSiteIndex(root=root, signature=_signature(files))
    for path in files:
        try:
            text = read_text(path)
        except OSError:  # gone, or not a regular file of bounded size: no calls from it
            continue
        site_of = os.path.relpath(path, root)
        found = (calls_in_markdown(text, site_of)
                 if path.lower().endswith(_MARKDOWN_SUFFIXES)
                 else calls_in_source(text, site_of))
        for name, site in found:
            index.calls.setdefault(name, []).append(site)
    return index


class CallSiteIndexes:
    """One index per workspace root, shared by every job of an engine."""

    def __init__(self) -> None:
        self._indexes: dict[str, CallSiteIndex] = {}
        self._lock = threading.Lock()

    def for_root(self, root: str) -> CallSiteIndex:
        root = os.path.abspath(root)
        with self._lock:
            index = self._indexes.get(root)
            if index is None or index.signature != _signature(_workspace_files(root)):
                index = self._indexes[root] = build_index(root)
            return index
