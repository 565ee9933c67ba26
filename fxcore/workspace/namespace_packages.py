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
import functools
import importlib.machinery
import keyword
import os
import re
import sys
from collections.abc import Iterable, Iterator

from fxcore.workspace.file_access import TextOf
from fxcore.workspace.parsing import parse_module

#: How many files' imports are read for one file at most: the file's, those it imports, then
#: its folder's other modules by name; a large folder is read in part.
MAX_FILES_READ = 16

#: One import: its level (dots), the module named after them, the names imported from it.
Import = tuple[int, str, tuple[str, ...]]


def namespace_folder(path: str, top: str, text_of: TextOf) -> str | None:
    """The outermost folder, ``top`` (the folder holding the top of ``path``'s
    ``__init__.py`` chain, or ``path``'s own) or one above it, that the imports read need to
    be a package: the import root is then its parent. None when they need none."""
    ancestors = _named_ancestors(top)
    if not ancestors:
        return None
    folders = _Folders(os.path.abspath(top), ancestors)
    needed: set[str] = set()
    for file, imports in folders.files_imports(os.path.abspath(path), text_of):
        needed.update(folders.packages_needed(file, imports))
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


@functools.lru_cache(maxsize=1024)
def _imports_of(text: str) -> tuple[Import, ...] | None:
    """The imports of a module's text (``import a.b`` is ``(0, "a.b", ())``,
    ``from ..m import x`` is ``(2, "m", ("x",))``); None when it does not parse. Kept per
    text: each file of a folder reads its siblings."""
    try:
        tree = parse_module(text)
    except SyntaxError:
        return None
    found: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend((0, alias.name, ()) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.append((node.level, node.module or "",
                          tuple(alias.name for alias in node.names if alias.name != "*")))
    return tuple(found)


def _dotted(module: str, names: tuple[str, ...]) -> list[str]:
    """The module and each name imported from it that may be a submodule."""
    return [module, *(f"{module}.{name}" if module else name for name in names)]


def _relative_base(file: str, level: int) -> str:
    """The folder a relative import of ``level`` dots in ``file`` starts from: the package
    that it needs ``file`` to be in."""
    base = os.path.dirname(file)
    for _ in range(level - 1):
        base = os.path.dirname(base)
    return base


class _Folders:
    """Modules found in folders as the path finder finds them, each folder listed once (as
    its ``FileFinder`` caches it), for one file's question."""

    def __init__(self, top: str, ancestors: list[str]) -> None:
        self.top = top
        #: Folder name -> the ancestors of ``top`` of that name, nearest first.
        self.by_name: dict[str, list[str]] = {}
        for folder in ancestors:
            self.by_name.setdefault(os.path.basename(folder), []).append(folder)
        self._listings: dict[str, dict[str, bool]] = {}
        self._installed: dict[str, bool] = {}
        self._package_import: re.Pattern[str] | None = None

    def listing(self, folder: str) -> dict[str, bool]:
        """Name -> whether it is a folder, of each entry of ``folder`` (empty: none)."""
        if folder not in self._listings:
            try:
                with os.scandir(folder) as entries:
                    self._listings[folder] = {entry.name: entry.is_dir() for entry in entries}
            except OSError:
                self._listings[folder] = {}
        return self._listings[folder]

    def module_path(self, base: str, dotted: str) -> str | None:
        """The file or folder of module ``dotted`` below ``base``, as the path finder would
        find it there (a package folder, with or without ``__init__.py``, else a module
        file); None when there is none."""
        path = base
        for part in dotted.split("."):
            if not _is_module_name(part):
                return None
            entries = self.listing(path)
            if entries.get(part):
                path = os.path.join(path, part)
                continue
            module = next((part + suffix for suffix in importlib.machinery.all_suffixes()
                           if entries.get(part + suffix) is False), None)
            if module is None:
                return None
            path = os.path.join(path, module)
        return path

    def sources(self, base: str, dotted_names: Iterable[str]) -> Iterator[str]:
        """The source files of those of the modules ``dotted_names`` found below ``base``."""
        for dotted in dotted_names:
            found = self.module_path(base, dotted)
            if found is None:
                continue
            if self.listing(os.path.dirname(found)).get(os.path.basename(found)):
                if self.listing(found).get("__init__.py") is False:  # a regular package
                    yield os.path.join(found, "__init__.py")
            elif found.endswith(".py"):
                yield found

    def files_imports(self, path: str,
                      text_of: TextOf) -> Iterator[tuple[str, tuple[Import, ...]]]:
        """(file, its imports) of ``path``, of the other modules in its folder and of the
        workspace files they import, each once, at most ``MAX_FILES_READ``."""
        siblings = [os.path.join(os.path.dirname(path), name)
                    for name, is_folder in sorted(self.listing(os.path.dirname(path)).items())
                    if name.endswith(".py") and not is_folder]
        queue = [path]
        seen = {path}

        def add(files: Iterable[str]) -> None:
            for file in files:
                if file not in seen:
                    seen.add(file)
                    queue.append(file)

        read = 0
        while queue and read < MAX_FILES_READ:
            file = queue.pop(0)
            text = text_of(file)
            imports = (_imports_of(text) if self.may_name_package(text) else ()) \
                if text is not None else None
            read += 1
            if imports is not None:
                yield file, imports
                add(self.imported_files(file, imports))
            if read == 1:  # the file's own imports first, then its folder's
                add(siblings)

    def may_name_package(self, text: str) -> bool:
        """Whether ``text`` has a relative import or one whose first name is a folder's of
        ``top``'s ancestors: only then are its imports parsed (most files name neither, and
        the job parses its own file once, after this)."""
        if self._package_import is None:
            names = "|".join(re.escape(name) for name in self.by_name)
            self._package_import = re.compile(
                rf"^[ \t]*(?:from[ \t]+\.|(?:from|import)[ \t]+(?:{names})\b)", re.MULTILINE)
        return self._package_import.search(text) is not None

    def imported_files(self, file: str, imports: tuple[Import, ...]) -> Iterator[str]:
        """The source files of the workspace modules ``file`` imports: relative imports from
        its folder, absolute ones from ``top`` (a script's sibling by bare name) or from the
        folder above an ancestor of ``top`` named as the import's first name."""
        for level, module, names in imports:
            if level:
                yield from self.sources(_relative_base(file, level), _dotted(module, names))
                continue
            first = module.split(".")[0]
            if self.module_path(self.top, first) is not None:
                yield from self.sources(self.top, _dotted(module, names))
                continue
            for named in self.by_name.get(first, ()):
                yield from self.sources(os.path.dirname(named), _dotted(module, names))

    def packages_needed(self, file: str, imports: tuple[Import, ...]) -> Iterator[str]:
        """The folders that ``file``'s imports need to be packages: a relative import's base,
        and the ancestor of ``top`` that an absolute import's first name names, unless that
        name is found beside ``top``'s modules (a script's sibling) or installed."""
        for level, module, _names in imports:
            if level:
                yield _relative_base(file, level)
                continue
            first = module.split(".")[0]
            folders = self.by_name.get(first)
            if not folders or self.module_path(self.top, first) is not None \
                    or self.installed(first):
                continue
            # Of folders of the same name, the nearest in which the whole dotted name resolves.
            yield next((named for named in folders
                        if self.module_path(os.path.dirname(named), module) is not None),
                       folders[0])

    def installed(self, name: str) -> bool:
        """Whether a top-level module ``name`` other than a namespace package is found
        outside the folders holding ``top``: built in, in the standard library or installed.
        A regular package comes before namespace portions wherever it is on the path, so a
        folder of that name above the file would not be imported."""
        if name not in self._installed:
            entries = [entry for entry in sys.path if isinstance(entry, str) and entry
                       and not _is_within(self.top, os.path.abspath(entry))]
            spec = importlib.machinery.PathFinder.find_spec(name, entries)
            self._installed[name] = name in sys.builtin_module_names \
                or (spec is not None and spec.origin is not None)
        return self._installed[name]


def _is_within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)
