"""The namespace package a file belongs to when the folder above its ``__init__.py`` chain
has no ``__init__.py``: read from imports, as far up as Python needs the import root to be
for them to resolve.

``pkg/a.py`` doing ``from pkg.b import Helper`` or ``from .b import Helper``, with no
``__init__.py`` in ``pkg``, imports as ``pkg.a`` from ``pkg``'s parent, as
``python -c "import pkg.a"`` run there imports it. The imports read are those of the file, of
the other modules in its folder (a folder is one package for all its files: a module that
names no package of its own still loads as ``pkg.b`` beside one that does) and of the
workspace files they import. A folder of scripts that import each other by bare name names
no folder above it: its files keep importing by their stems from it, as
``python script.py`` runs them.
"""

from __future__ import annotations

import ast
import importlib.machinery
import keyword
import os
import sys
from collections.abc import Callable, Iterable, Iterator

from fxcore.workspace.parsing import parse_module

#: A file's text as the user sees it (an editor's buffer, a notebook's module); None when it
#: cannot be read.
TextOf = Callable[[str], "str | None"]

#: How many files' imports are read for one file at most: a large folder is read in part.
MAX_FILES_READ = 64


def namespace_folder(path: str, top: str, text_of: TextOf) -> str | None:
    """The outermost folder, ``top`` (the folder holding the top of ``path``'s
    ``__init__.py`` chain, or ``path``'s own) or one above it, that the imports read need to
    be a package: the import root is then its parent. None when they need none."""
    ancestors = _named_ancestors(top)
    if not ancestors:
        return None
    by_name: dict[str, list[str]] = {}
    for folder in ancestors:  # nearest first
        by_name.setdefault(os.path.basename(folder), []).append(folder)
    needed: set[str] = set()
    for file, tree in _trees(path, top, text_of):
        needed.update(_packages_needed(file, tree, top, by_name))
    reached = [index for index, folder in enumerate(ancestors) if folder in needed]
    return ancestors[max(reached)] if reached else None


def _named_ancestors(top: str) -> list[str]:
    """``top`` and the folders above it, nearest first, up to the first whose name is no
    module name: a dotted name goes through each."""
    folders = []
    folder = os.path.abspath(top)
    while _is_module_name(os.path.basename(folder)):
        folders.append(folder)
        folder = os.path.dirname(folder)
    return folders


def _is_module_name(name: str) -> bool:
    return name.isidentifier() and not keyword.iskeyword(name)


def _trees(path: str, top: str, text_of: TextOf) -> Iterator[tuple[str, ast.Module]]:
    """(file, tree) of ``path``, of the other modules in its folder and of the workspace
    files they import, each once, at most ``MAX_FILES_READ``."""
    path = os.path.abspath(path)
    queue = [path]
    seen = {path}
    read = 0
    siblings_queued = False
    while queue and read < MAX_FILES_READ:
        file = queue.pop(0)
        text = text_of(file)
        tree = _parsed(text) if text is not None else None
        read += 1
        if tree is not None:
            yield file, tree
            for imported in _imported_files(file, tree, top):
                if imported not in seen:
                    seen.add(imported)
                    queue.append(imported)
        if not siblings_queued:
            siblings_queued = True
            for sibling in _modules_in(os.path.dirname(path)):
                if sibling not in seen:
                    seen.add(sibling)
                    queue.append(sibling)


def _parsed(text: str) -> ast.Module | None:
    try:
        return parse_module(text)
    except SyntaxError:
        return None


def _modules_in(folder: str) -> list[str]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [os.path.join(folder, name) for name in names
            if name.endswith(".py") and os.path.isfile(os.path.join(folder, name))]


def _imports(tree: ast.Module) -> Iterator[tuple[int, str, list[str]]]:
    """(level, module, names from it) of each import: ``import a.b`` is ``(0, "a.b", [])``,
    ``from ..m import x`` is ``(2, "m", ["x"])``."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield 0, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            yield node.level, node.module or "", [alias.name for alias in node.names
                                                  if alias.name != "*"]


def _dotted(module: str, names: list[str]) -> list[str]:
    """The module and each name imported from it that may be a submodule."""
    return [module, *(f"{module}.{name}" if module else name for name in names)]


def _imported_files(file: str, tree: ast.Module, top: str) -> Iterator[str]:
    """The source files of the workspace modules ``file`` imports: relative imports from its
    folder, absolute ones from ``top`` (a script's sibling by bare name) or from the folder
    above an ancestor named as the import's first name."""
    for level, module, names in _imports(tree):
        if level:
            yield from _sources(_relative_base(file, level), _dotted(module, names))
            continue
        first = module.split(".")[0]
        if _in_folder(top, first):
            yield from _sources(top, _dotted(module, names))
            continue
        probe = os.path.dirname(file)
        while os.path.basename(probe) and os.path.basename(probe) != first:
            probe = os.path.dirname(probe)
        if os.path.basename(probe) == first:
            yield from _sources(os.path.dirname(probe), _dotted(module, names))


def _relative_base(file: str, level: int) -> str:
    """The folder a relative import of ``level`` dots in ``file`` starts from: the package
    that it needs ``file`` to be in."""
    base = os.path.dirname(file)
    for _ in range(level - 1):
        base = os.path.dirname(base)
    return base


def _sources(base: str, dotted_names: Iterable[str]) -> Iterator[str]:
    for dotted in dotted_names:
        found = _module_path(base, dotted)
        if found is None:
            continue
        if os.path.isdir(found):
            found = os.path.join(found, "__init__.py")
        if found.endswith(".py") and os.path.isfile(found):
            yield found


def _module_path(base: str, dotted: str) -> str | None:
    """The file or folder of module ``dotted`` below ``base``, as the path finder would find
    it there (a package folder, with or without ``__init__.py``, else a module file); None
    when there is none."""
    path = base
    for part in dotted.split("."):
        if not os.path.isdir(path) or not _is_module_name(part):
            return None
        folder = os.path.join(path, part)
        if os.path.isdir(folder):
            path = folder
            continue
        module = next((folder + suffix for suffix in importlib.machinery.all_suffixes()
                       if os.path.isfile(folder + suffix)), None)
        if module is None:
            return None
        path = module
    return path


def _in_folder(folder: str, name: str) -> bool:
    """Whether ``import name`` finds a module or package in ``folder`` itself."""
    return _module_path(folder, name) is not None


def _packages_needed(file: str, tree: ast.Module, top: str,
                     by_name: dict[str, list[str]]) -> Iterator[str]:
    """The folders that ``file``'s imports need to be packages: a relative import's base, and
    the ancestor of ``top`` that an absolute import's first name names, unless that name is
    found beside ``top``'s modules (a script's sibling) or installed."""
    for level, module, _names in _imports(tree):
        if level:
            yield _relative_base(file, level)
            continue
        first = module.split(".")[0]
        folders = by_name.get(first)
        if not folders or _in_folder(top, first) or _installed(first, file):
            continue
        # Of folders of the same name, the nearest in which the whole dotted name resolves.
        yield next((named for named in folders
                    if _module_path(os.path.dirname(named), module) is not None), folders[0])


def _installed(name: str, file: str) -> bool:
    """Whether a top-level module ``name`` other than a namespace package is found outside
    the folders holding ``file``: built in, in the standard library or installed. A regular
    package comes before namespace portions wherever it is on the path, so a folder of that
    name above the file would not be imported."""
    if name in sys.builtin_module_names:
        return True
    folder = os.path.dirname(os.path.abspath(file))
    entries = [entry for entry in sys.path if isinstance(entry, str) and entry
               and not _is_within(folder, os.path.abspath(entry))]
    spec = importlib.machinery.PathFinder.find_spec(name, entries)
    return spec is not None and spec.origin is not None


def _is_within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)
