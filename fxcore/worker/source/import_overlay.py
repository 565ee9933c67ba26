"""Importing inside a worker: the workspace's import paths, unsaved editor buffers in place of
the files on disk, and what an import loaded (the hashes of the workspace files' bytes it
compiled, the modules it did not find in the workspace)."""

from __future__ import annotations
import __future__

import ast
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import io
import itertools
import keyword
import linecache
import os
import sys
import sysconfig
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

from fxcore.model.results import FailedAssignment
from fxcore.worker.source.user_objects import user_attribute
from fxcore.workspace.file_access import content_hash, text_hash


class ImportRecord:
    """What the job's imports compiled from the workspace and looked for there in vain: the
    dependencies a cached result is checked against."""

    def __init__(self) -> None:
        #: Absolute path -> hash of the bytes compiled.
        self.hashes: dict[str, str] = {}
        #: Files compiled twice with different bytes (rewritten during the job): no hash
        #: vouches for them.
        self.changed: set[str] = set()
        #: Module name -> the workspace folders it was looked for in and not found.
        self.missing: dict[str, list[str]] = {}
        #: A notebook's assignments that raised on import (``_NotebookLoader``).
        self.failed_assignments: list[FailedAssignment] = []

    def compiled(self, path: str, digest: str) -> None:
        if self.hashes.setdefault(path, digest) != digest:
            self.changed.add(path)

    def compiled_files(self) -> set[str]:
        return {*self.hashes, *self.changed}

    def stable_hashes(self) -> dict[str, str]:
        return {path: digest for path, digest in self.hashes.items() if path not in self.changed}


class _RecordingLoader(importlib.machinery.SourceFileLoader):
    """Loads a workspace file from disk, reading its bytes once: the bytes compiled (or that
    the bytecode cache was checked against) are the bytes whose hash is recorded."""

    def __init__(self, fullname: str, path: str, record: ImportRecord) -> None:
        super().__init__(fullname, path)
        self._record = record
        self._source: bytes | None = None
        self._stats: dict[str, float | int] = {}

    def _read_source(self) -> bytes:
        if self._source is None:
            with io.open_code(self.path) as handle:
                source = handle.read()
                # The stats of what was read: a bytecode cache entry is used only when it
                # was written for a file of this time and size.
                status = os.fstat(handle.fileno())
            self._source = source
            self._stats = {"mtime": status.st_mtime, "size": status.st_size}
            self._record.compiled(self.path, content_hash(source))
        return self._source

    def get_data(self, path: str) -> bytes:
        return self._read_source() if path == self.path else super().get_data(path)

    def path_stats(self, path: str) -> dict[str, float | int]:
        if path != self.path:
            return super().path_stats(path)
        self._read_source()
        return self._stats

    def set_data(self, path: str, data: bytes, *, _mode: int = 0o666) -> None:
        """Write the bytecode checked by the source's hash, not by its time and size: a file
        saved again within the same second at the same size (``2`` edited to ``3``, a fix
        that swaps one name for another as long) would otherwise be run as its old text.
        Python checks such a file's hash on every import, against the bytes read."""
        if data[4:8] == _TIMESTAMP_FLAGS and self._source is not None:
            data = data[:4] + _CHECKED_HASH_FLAGS + importlib.util.source_hash(
                self._source) + data[16:]
        super().set_data(path, data, _mode=_mode)


#: The flags of a .pyc (PEP 552): validated by its source's time stamp, or by its hash.
_TIMESTAMP_FLAGS = (0).to_bytes(4, "little")
_CHECKED_HASH_FLAGS = (0b11).to_bytes(4, "little")


class _OverlayLoader(importlib.machinery.SourceFileLoader):
    """Loads a file's unsaved editor buffer instead of its text on disk."""

    def __init__(self, fullname: str, path: str, text: str, record: ImportRecord) -> None:
        super().__init__(fullname, path)
        self._text = text
        self._record = record

    def get_data(self, path: str) -> bytes:
        if path == self.path:
            self._record.compiled(self.path, text_hash(self._text))
            return self._text.encode("utf-8")
        raise OSError("no bytecode cache for unsaved buffers")

    def path_stats(self, path: str) -> dict[str, float]:
        return {"mtime": 0.0, "size": float(len(self._text))}

    def set_data(self, path: str, data: bytes, *, _mode: int = 0o666) -> None:
        """Never write bytecode for a buffer."""


class _NotebookLoader(_OverlayLoader):
    """Loads a notebook's module (``fxcore.workspace.notebook``) one top-level statement at a time,
    as
    its cells run: an assignment that raises (a dataset class reading a file that is not
    there) is skipped and recorded, its names left unbound, and the rest still loads. Each
    statement is compiled with its own line numbers, so tracebacks and source lookups see
    the module's lines."""

    def exec_module(self, module: ModuleType) -> None:
        text = self.get_data(self.path).decode("utf-8")
        # A `from __future__ import annotations` first holds for every statement after it,
        # as it does for a module compiled whole.
        future_flags = 0
        for statement in ast.parse(text, self.path).body:
            if isinstance(statement, ast.ImportFrom) and statement.module == "__future__":
                for alias in statement.names:
                    feature = getattr(__future__, alias.name, None)
                    future_flags |= getattr(feature, "compiler_flag", 0)
            code = compile(ast.Module(body=[statement], type_ignores=[]), self.path, "exec",
                           flags=future_flags, dont_inherit=True)
            if not isinstance(statement, (ast.Assign, ast.AnnAssign)):
                exec(code, module.__dict__)
                continue
            try:
                exec(code, module.__dict__)
            except Exception as error:  # the cell's code may raise anything
                names = sorted({node.id for target in _targets(statement)
                                for node in ast.walk(target) if isinstance(node, ast.Name)})
                self._record.failed_assignments.append(FailedAssignment(
                    line=statement.lineno, names=names, error=_described(error)))


def _targets(statement: ast.Assign | ast.AnnAssign) -> list[ast.expr]:
    return statement.targets if isinstance(statement, ast.Assign) else [statement.target]


def _described(error: BaseException) -> str:
    """``Type: message``, even when the exception's ``__str__`` raises."""
    try:
        detail = str(error).strip()
    except Exception:
        detail = ""
    return f"{type(error).__name__}: {detail}" if detail else type(error).__name__


class _WorkspaceFinder(importlib.abc.MetaPathFinder):
    """Finds modules as ``PathFinder`` does (it runs just before it), loading workspace files
    through loaders that record what they compiled, with unsaved buffers in place of the
    files on disk, and recording the modules not found in workspace folders."""

    def __init__(self, overlays: dict[str, str], is_workspace: Callable[[str], bool],
                 record: ImportRecord, notebooks: dict[str, tuple[str, str]]) -> None:
        self._overlays = overlays
        self._is_workspace = is_workspace
        self._record = record
        self._notebooks = notebooks

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname in self._notebooks:
            origin, text = self._notebooks[fullname]
            return importlib.util.spec_from_file_location(
                fullname, origin, loader=_NotebookLoader(fullname, origin, text, self._record))
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None:
            searched = [os.path.abspath(entry) for entry in (sys.path if path is None else path)
                        if isinstance(entry, str) and self._is_workspace(entry)]
            if searched:
                self._record.missing.setdefault(fullname, searched)
            return None
        if spec.origin is None:
            return spec  # a namespace package: no file of its own
        origin = os.path.abspath(spec.origin)
        loader: importlib.machinery.SourceFileLoader
        if origin in self._overlays:
            loader = _OverlayLoader(fullname, origin, self._overlays[origin], self._record)
        elif self._is_workspace(origin) \
                and type(spec.loader) is importlib.machinery.SourceFileLoader:
            loader = _RecordingLoader(fullname, origin, self._record)
        else:
            return spec  # installed, compiled or extension modules: nothing to record
        return importlib.util.spec_from_file_location(
            fullname,
            origin,
            loader=loader,
            submodule_search_locations=spec.submodule_search_locations,
        )


def install_import_paths(entries: Iterable[str], overlays: dict[str, str],
                         is_workspace: Callable[[str], bool],
                         notebooks: dict[str, tuple[str, str]] | None = None) -> ImportRecord:
    """Put the folders ``entries`` on ``sys.path`` and the buffers ``overlays`` (absolute
    path -> text) in place of their files, for imports and for tracebacks; the record fills
    as imports compile workspace files. ``notebooks`` (module name -> (absolute path of the
    ``.ipynb``, the module of its cells: ``fxcore.workspace.notebook``)) import under those
    names."""
    notebooks = notebooks or {}
    overlays = {path: text for path, text in overlays.items()
                if path not in {origin for origin, _ in notebooks.values()}}
    for entry in entries:
        if os.path.isdir(entry) and entry not in sys.path:
            sys.path.insert(0, entry)
    record = ImportRecord()
    finder = _WorkspaceFinder(overlays, is_workspace, record, notebooks)
    # Just before PathFinder: built-in and frozen modules still come first, as in a plain
    # import.
    position = next((index for index, existing in enumerate(sys.meta_path)
                     if existing is importlib.machinery.PathFinder), 0)
    sys.meta_path.insert(position, finder)
    for path, text in [*overlays.items(), *notebooks.values()]:
        linecache.cache[path] = (len(text), None, text.splitlines(keepends=True), path)
    importlib.invalidate_caches()
    return record


#: How many of the modules loaded last before a job mark where its own begin.
_MARKS = 8


class ModulesLoadedSince:
    """The modules loaded since it was made (a job's start), found from the newest back to
    the modules loaded last before, so that the others are not gone over: in a child forked
    from the zygote, each module name and object read is a page the child copies from the
    zygote (going over all of ``sys.modules``, each module's file included, cost 23 ms of CPU
    and 4,700 page faults in every child). ``sys.modules`` keeps the order of insertion.
    """

    def __init__(self) -> None:
        self._count = len(sys.modules)
        #: The last modules loaded before, newest first, as (name, module).
        self._marks = [(name, sys.modules.get(name))
                       for name in itertools.islice(reversed(sys.modules), _MARKS)]

    def items(self) -> list[tuple[str, ModuleType]]:
        """(name, module) of each, oldest first. Where the job's code removed, replaced or
        moved every mark, every module but the marks counts as loaded since: more than were,
        none missed."""
        added = len(sys.modules) - self._count
        names: list[str] | None = None
        for boundary, module in self._marks:
            if not isinstance(boundary, str) or sys.modules.get(boundary) is not module:
                continue  # removed or replaced
            # In one C call, without a thread switch that could change sys.modules meanwhile.
            newer = list(itertools.takewhile(boundary.__ne__, reversed(sys.modules)))
            if len(newer) >= added:  # else it moved after some of them: the one before
                names = newer[::-1]
                break
        marks = {name for name, _ in self._marks}
        loaded = [(name, sys.modules.get(name))
                  for name in (list(sys.modules) if names is None else names)
                  if name not in marks]
        return [(name, module) for name, module in loaded if module is not None]


def imported_workspace_files(since: ModulesLoadedSince,
                             is_workspace: Callable[[str], bool]) -> set[str]:
    """Absolute paths of the workspace files of the modules loaded ``since``."""
    files = (user_attribute(module, "__file__") for _name, module in since.items())
    return {os.path.abspath(file) for file in files
            if isinstance(file, str) and is_workspace(file)}


def imported_third_party_packages(
    since: ModulesLoadedSince, is_workspace: Callable[[str], bool]
) -> list[str]:
    """Top-level packages loaded ``since`` from the installed environment, by their import
    names (modules such as ``_sysconfigdata__linux_x86_64-linux-gnu`` or mypyc's
    ``81d2...__mypyc`` are loaded by file, not imported by name: they are left out)."""
    installed = tuple(os.path.join(os.path.abspath(folder), "") for folder in
                      {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    packages = set()
    for name, module in since.items():
        if not name.isidentifier() or keyword.iskeyword(name):
            continue
        file = user_attribute(module, "__file__")
        if isinstance(file, str) and os.path.abspath(file).startswith(installed) \
                and not is_workspace(file):
            packages.add(name)
    return sorted(packages)
