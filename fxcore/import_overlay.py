"""Importing inside a worker: the workspace's import paths, unsaved editor buffers in place of
the files on disk, and what an import loaded."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import linecache
import os
import sys
import sysconfig
from collections.abc import Callable, Iterable
from typing import Any


class _OverlayLoader(importlib.machinery.SourceFileLoader):
    """Loads a file's unsaved editor buffer instead of its text on disk."""

    def __init__(self, fullname: str, path: str, text: str) -> None:
        super().__init__(fullname, path)
        self._text = text

    def get_data(self, path: str) -> bytes:
        if path == self.path:
            return self._text.encode("utf-8")
        raise OSError("no bytecode cache for unsaved buffers")

    def path_stats(self, path: str) -> dict[str, float]:
        return {"mtime": 0.0, "size": float(len(self._text))}

    def set_data(self, path: str, data: bytes, *, _mode: int = 0o666) -> None:
        """Never write bytecode for a buffer."""


class _OverlayFinder(importlib.abc.MetaPathFinder):
    """Makes imports see unsaved editor buffers in place of the files on disk."""

    def __init__(self, overlays: dict[str, str]) -> None:
        self._overlays = overlays

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.origin is None:
            return None
        origin = os.path.abspath(spec.origin)
        if origin not in self._overlays:
            return None
        loader = _OverlayLoader(fullname, origin, self._overlays[origin])
        return importlib.util.spec_from_file_location(
            fullname,
            origin,
            loader=loader,
            submodule_search_locations=spec.submodule_search_locations,
        )


def install_import_paths(entries: Iterable[str], overlays: dict[str, str]) -> None:
    """Put the folders ``entries`` on ``sys.path`` and the buffers ``overlays`` (absolute
    path -> text) in place of their files, for imports and for tracebacks."""
    for entry in entries:
        if os.path.isdir(entry) and entry not in sys.path:
            sys.path.insert(0, entry)
    if overlays:
        sys.meta_path.insert(0, _OverlayFinder(overlays))
        for path, text in overlays.items():
            linecache.cache[path] = (len(text), None, text.splitlines(keepends=True), path)
    importlib.invalidate_caches()


def imported_workspace_files(preloaded: set[str], is_workspace: Callable[[str], bool]) -> set[str]:
    """Absolute paths of the workspace files of the modules loaded since ``preloaded``."""
    return {
        os.path.abspath(module.__file__)
        for name, module in list(sys.modules.items())
        if name not in preloaded
        and isinstance(getattr(module, "__file__", None), str)
        and is_workspace(module.__file__)
    }


def imported_third_party_packages(
    preloaded: set[str], is_workspace: Callable[[str], bool]
) -> list[str]:
    """Top-level packages loaded since ``preloaded`` from the installed environment."""
    installed = tuple(os.path.join(os.path.abspath(folder), "") for folder in
                      {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]})
    packages = set()
    for name, module in list(sys.modules.items()):
        if name in preloaded or "." in name:
            continue
        file = getattr(module, "__file__", None)
        if isinstance(file, str) and os.path.abspath(file).startswith(installed) \
                and not is_workspace(file):
            packages.add(name)
    return sorted(packages)
