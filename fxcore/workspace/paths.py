"""Where files live: the workspace root, Python import names, the files to check."""

from __future__ import annotations

import fnmatch
import functools
import keyword
import os
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass

from fxcore.model.job_spec import EngineConfig, TraceJob
from fxcore.model.results import Frame
from fxcore.workspace.file_access import TextOf, read_text
from fxcore.workspace.namespace_packages import namespace_folder
from fxcore.workspace.notebook.cells import (
    MAX_NOTEBOOK_BYTES,
    NOTEBOOK_SUFFIX,
    NotebookModule,
    is_notebook,
)
from fxcore.workspace.notebook.module_builder import notebook_module_of_json

#: Folders never searched for model files.
SKIPPED_FOLDERS = frozenset(
    {
        ".git",
        ".hg",
        ".venv",
        "venv",
        "env",
        "__pycache__",
        "node_modules",
        "build",
        "dist",
        ".fx-lsp-cache",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        "site-packages",
    }
)


#: Files that mark a project's root, as Jedi's project detection reads them: a library's own
#: helpers beside the checked folder are then the workspace's, located at their lines.
PROJECT_FILES = ("pyproject.toml", "setup.py", "setup.cfg")


def _is_within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def find_workspace_root(path: str, boundaries: Iterable[str] | None = None) -> str:
    """The nearest folder upwards holding a ``pyproject.toml``, a ``setup.py`` or
    ``setup.cfg`` (a package's checkout without one, an sdist unpacked) or ``.git``, else the
    file's own folder.

    ``boundaries`` are the folders the editor opened: the search never goes above the
    innermost one holding ``path``, and ends there (the opened folder is the root when
    nothing below it marks one). A file outside every boundary gets its own folder: quick
    fixes then edit, and the cache goes, nowhere the user did not open. Without boundaries
    (the CLI) the search goes up but never reaches the home folder or above it, where a
    ``.git`` holds dotfiles rather than a project.
    """
    start = os.path.abspath(path)
    folder = start if os.path.isdir(start) else os.path.dirname(start)
    if boundaries is not None:
        containing = [
            os.path.abspath(b) for b in boundaries if b and _is_within(folder, os.path.abspath(b))
        ]
        if not containing:
            return folder
        limit = max(containing, key=len)
    else:
        home = os.path.abspath(os.path.expanduser("~"))
        limit = None
        if _is_within(folder, home) and folder != home:
            limit = folder
            while os.path.dirname(limit) != home:
                limit = os.path.dirname(limit)
    probe = folder
    while True:
        if any(os.path.isfile(os.path.join(probe, marker)) for marker in PROJECT_FILES) \
                or os.path.exists(os.path.join(probe, ".git")):
            return probe
        parent = os.path.dirname(probe)
        if probe == limit or parent == probe:
            return limit if boundaries is not None and limit is not None else folder
        probe = parent


@dataclass(frozen=True)
class ImportLocation:
    """How a file is imported: the ``sys.path`` entry to add, the dotted module name, and the
    folder above its ``__init__.py`` chain, where a script finds its siblings by bare name
    (the ``sys.path`` entry itself unless that folder is in a namespace package)."""

    sys_path_entry: str
    module_name: str
    script_folder: str


def import_location(path: str, text_of: TextOf | None = None) -> ImportLocation:
    """Derive a file's import name from the package ``__init__.py`` chain above it, and
    above that from the namespace packages (folders without ``__init__.py``) that imports
    name (``fxcore.workspace.namespace_packages``), read through ``text_of`` (the files on
    disk without it).

    ``src/pkg/sub/net.py`` with ``__init__.py`` in ``pkg`` and ``sub`` imports as
    ``pkg.sub.net`` from ``src``; ``lib/ns/net.py`` without one that imports ``ns.layers``
    imports as ``ns.net`` from ``lib``; a file in a plain script folder imports by its stem
    from that folder. Relative imports inside packages then resolve as they do for users.
    """
    path = os.path.abspath(path)
    folder, filename = os.path.split(path)
    stem = os.path.splitext(filename)[0]
    if is_notebook(path):
        stem = notebook_module_name(stem)
    parts = [] if stem == "__init__" else [stem]
    while os.path.isfile(os.path.join(folder, "__init__.py")):
        folder, package = os.path.split(folder)
        parts.insert(0, package)
    if not parts:  # a top-level __init__.py outside any package
        parts = [os.path.basename(os.path.dirname(path))]
        folder = os.path.dirname(os.path.dirname(path))
    script_folder = folder
    outer = namespace_folder(path, folder, text_of or functools.partial(source_text,
                                                                        overlays={}))
    if outer is not None:
        parts[:0] = os.path.relpath(folder, os.path.dirname(outer)).split(os.sep)
        folder = os.path.dirname(outer)
    return ImportLocation(sys_path_entry=folder, module_name=".".join(parts),
                          script_folder=script_folder)


def job_import_location(job: TraceJob, read: dict[str, str | None] | None = None
                        ) -> ImportLocation:
    """Where the worker imports ``job``'s file from, and as what: read with its buffers;
    ``read``: texts of files the caller has read already (absolute path -> text), not read
    again."""
    overlays = {os.path.abspath(path): text for path, text in job.overlays.items()}
    known = read or {}

    def text_of(path: str) -> str | None:
        return known[path] if path in known else source_text(path, overlays)

    return import_location(job.path, text_of)


def notebook_module_name(stem: str) -> str:
    """The module name a notebook is imported under: its file name's stem made an identifier
    (``01-data prep.ipynb`` -> ``_01_data_prep``), as notebooks are seldom named as modules."""
    name = re.sub(r"\W", "_", stem) or "_"
    return f"_{name}" if name[0].isdigit() or keyword.iskeyword(name) else name


def _no_text(_path: str) -> None:
    """No file's text: an import name from the ``__init__.py`` chain alone, where only the
    top package matters (torch's own files are a regular package's)."""
    return None


def leaf_module_frames(frames: Iterable[Frame]) -> Iterator[Frame]:
    """The ``forward`` frames of a failure's call chain, innermost first, whose class a
    leaf module would make opaque: torch's own are left out, since torch.fx calls its layers
    as leaves already and traces its containers (``Sequential``) only to run their children;
    marking every ``Sequential`` a leaf would make whole models opaque."""
    for frame in reversed(list(frames)):
        if frame.function == "forward" \
                and import_location(frame.path, _no_text).module_name.split(".")[0] != "torch":
            yield frame


def is_workspace_file(path: str, workspace_root: str) -> bool:
    """True for the user's own files: under the root, not in an installed environment. A
    relative path is not one: it is what a compiled extension names as its source
    (``numpy/random/mtrand.pyx``), never a file of the workspace."""
    if not os.path.isabs(path):
        return False
    path = os.path.abspath(path)
    root = os.path.abspath(workspace_root)
    if not (path == root or path.startswith(root + os.sep)):
        return False
    relative_parts = os.path.relpath(path, root).split(os.sep)
    return not any(part in SKIPPED_FOLDERS for part in relative_parts[:-1])


def is_excluded(path: str, workspace_root: str, patterns: Iterable[str]) -> bool:
    """``[tool.fx-lsp] exclude``: glob patterns matched against a file's path relative to
    its workspace root and against its file name."""
    relative = os.path.relpath(os.path.abspath(path), os.path.abspath(workspace_root))
    name = os.path.basename(path)
    return any(fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(name, pattern)
               for pattern in patterns)


#: Line ends as LSP and editors count them.
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` as LSP counts them (``\\n``, ``\\r\\n`` and ``\\r`` end a line)."""
    return _LINE_BREAK.split(text)


def source_text(path: str, overlays: dict[str, str], strict: bool = False) -> str | None:
    """A file's text as the user sees it: its unsaved buffer if any, else the file on disk;
    ``None`` when it cannot be read (``fxcore.workspace.file_access.read_bytes``: only a regular
    file,
    of bounded size). Bytes that are not UTF-8 read as U+FFFD, or, with ``strict`` (for text
    that an edit will be computed from and written back), make it unreadable.

    A notebook's (``.ipynb``) text is the module of its code cells (``fxcore.workspace.notebook``),
    built
    from its JSON (an overlay of it is its JSON too); None when that is not a notebook's."""
    path = os.path.abspath(path)
    if is_notebook(path):
        raw = notebook_json(path, overlays, strict)
        module = notebook_module_of_json(raw) if raw is not None else None
        return module.text if module is not None else None
    if path in overlays:
        return overlays[path]
    try:
        return read_text(path, errors="strict" if strict else "replace")
    except (OSError, UnicodeDecodeError):
        return None


def notebook_json(path: str, overlays: dict[str, str], strict: bool = False) -> str | None:
    """A notebook's JSON text: its editor overlay if any, else the file (None: unreadable)."""
    path = os.path.abspath(path)
    if path in overlays:
        return overlays[path]
    try:
        return read_text(path, errors="strict" if strict else "replace",
                         limit=MAX_NOTEBOOK_BYTES)
    except (OSError, UnicodeDecodeError):
        return None


def notebook_module(path: str, overlays: dict[str, str]) -> NotebookModule | None:
    """The module of the notebook at ``path`` (its overlay, else the file); None when it
    cannot be read as a notebook."""
    raw = notebook_json(path, overlays)
    return notebook_module_of_json(raw) if raw is not None else None


def python_files(paths: Iterable[str], notebooks: bool = False) -> list[str]:
    """Every ``.py`` file (and ``.ipynb`` notebook, with ``notebooks``) named or found below
    the given paths, sorted, without duplicates. (``exclude`` is applied per project by
    ``trace_jobs``.)"""
    suffixes = (".py", NOTEBOOK_SUFFIX) if notebooks else (".py",)
    found: set[str] = set()
    for given in paths:
        given = os.path.abspath(given)
        if os.path.isfile(given):
            found.add(given)
            continue
        for folder, subfolders, files in os.walk(given):
            subfolders[:] = [
                name
                for name in subfolders
                if name not in SKIPPED_FOLDERS and not name.startswith(".")
            ]
            for name in files:
                if name.endswith(suffixes):
                    found.add(os.path.join(folder, name))
    return sorted(found)


def trace_jobs(
    files: Iterable[str],
    root_of: Callable[[str], str],
    config_of: Callable[[str], EngineConfig],
    overlays: dict[str, str] | None = None,
) -> list[TraceJob]:
    """One job per file, with its workspace root and that root's config, leaving out the files
    the config excludes: the CLI, the server's document traces and its workspace trace all
    build their jobs here."""
    jobs = []
    for path in files:
        root = root_of(path)
        config = config_of(root)
        if not is_excluded(path, root, config.exclude):
            jobs.append(TraceJob(path=path, workspace_root=root, config=config,
                                 overlays=overlays if overlays is not None else {}))
    return jobs
