"""The index of a workspace's constructor calls, kept current by file stamps and events, and
the choice of the calls a class is built from (``most_varied``)."""

from __future__ import annotations

import ast
import logging
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

from fxcore.model.job_spec import CallSite
from fxcore.workspace.call_sites.calls import calls_in_source
from fxcore.workspace.call_sites.documents import calls_in_markdown, calls_in_notebook
from fxcore.workspace.call_sites.literals import called_class_name
from fxcore.workspace.call_sites.reading_budget import (
    MAX_PASS_BYTES,
    PASS_SECONDS,
    ReadingBudget,
    ReadingBudgetSpent,
)
from fxcore.workspace.calling_paths import is_calling_file
from fxcore.workspace.file_access import MAX_FILE_BYTES
from fxcore.workspace.notebook.cells import MAX_NOTEBOOK_BYTES, NOTEBOOK_SUFFIX, is_notebook
from fxcore.workspace.parsing import parse_expression
from fxcore.workspace.paths import SKIPPED_FOLDERS
from fxcore.workspace.reading import read_workspace_text

#: Markdown files read besides the Python ones.
MARKDOWN_SUFFIXES = (".md", ".markdown", ".rst")

logger = logging.getLogger(__name__)


@dataclass
class _IndexedFile:
    """The calls of one file, read when its size and modification time were ``stamp``."""

    stamp: tuple[int, int]
    calls: list[tuple[str, CallSite]]


@dataclass
class CallSiteIndex:
    """Every literal constructor call of one workspace, by class name. Built by one walk of
    the workspace; then each file is read again only when it is named by ``update`` (a file
    event) or found changed by ``rescan``."""

    root: str
    files: dict[str, _IndexedFile] = field(default_factory=dict)
    #: Class name -> its calls, by file then as found in the file; merged from ``files`` on
    #: the first look-up after a change.
    _calls: dict[str, list[CallSite]] | None = None

    def for_class(self, name: str) -> CallSite | None:
        """The first call of ``name`` (by file, then line): the one a reader meets first."""
        sites = self.for_class_all(name)
        return sites[0] if sites else None

    def for_class_all(self, name: str) -> list[CallSite]:
        """Every literal call of ``name``, by file then line."""
        return [site for site in self._merged().get(name, []) if not site.partial]

    def keyword_values(self, name: str) -> dict[str, tuple[str, ...]]:
        """Parameter -> the distinct literal values the partly literal calls of ``name`` give
        it (``CallSite.partial``), by file then line."""
        values: dict[str, dict[str, None]] = {}
        for site in self._merged().get(name, []):
            if site.partial:
                for parameter, source in site.kwargs:
                    values.setdefault(parameter, {})[source] = None
        return {parameter: tuple(sources) for parameter, sources in values.items()}

    def _merged(self) -> dict[str, list[CallSite]]:
        if self._calls is None:
            self._calls = {}
            for path in sorted(self.files):
                for name, site in self.files[path].calls:
                    self._calls.setdefault(name, []).append(site)
        return self._calls

    def rescan(self) -> set[str]:
        """Walk the workspace: read new and changed files, forget deleted ones, within one
        pass's budget (``reading_budget``; a file it leaves out is read by a later pass).
        The names of the classes whose calls may have changed."""
        found = _workspace_files(self.root)
        changed = {name for path in set(self.files) - set(found) for name in self._forget(path)}
        budget = ReadingBudget()
        for path in sorted(found, key=self._reading_order):
            changed |= self._read(path, force=False, budget=budget)
        self._said_left_out(budget, len(found))
        return changed

    def update(self, path: str) -> set[str]:
        """``path`` was created, changed or deleted (a file or a folder): bring its calls up
        to date. The names of the classes whose calls may have changed."""
        if path == self.root or self.root.startswith(path + os.sep):
            return self.rescan()  # the whole workspace, or a folder around it
        if os.path.isdir(path):
            inside = set(_workspace_files(path)) if self._indexed(path, folder=True) else set()
            below = {known for known in self.files if known.startswith(path + os.sep)}
            changed = {name for known in below - inside for name in self._forget(known)}
            budget = ReadingBudget()
            for found in sorted(inside, key=self._reading_order):
                changed |= self._read(found, force=True, budget=budget)
            self._said_left_out(budget, len(inside))
            return changed
        if self._indexed(path, folder=False) and os.path.isfile(path):
            return self._read(path, force=True, budget=ReadingBudget())
        below = [known for known in self.files
                 if known == path or known.startswith(path + os.sep)]
        return {name for known in below for name in self._forget(known)}

    def _indexed(self, path: str, folder: bool) -> bool:
        """Whether the walk of the workspace reads ``path`` (or walks into the folder)."""
        relative = os.path.relpath(path, self.root)
        if relative == os.curdir:
            return folder
        parts = relative.split(os.sep)
        if parts[0] == os.pardir:
            return False
        folders = parts if folder else parts[:-1]
        if any(part.startswith(".") or part in SKIPPED_FOLDERS for part in folders):
            return False
        return folder or _is_indexed_name(parts[-1])

    def _forget(self, path: str) -> set[str]:
        indexed = self.files.pop(path, None)
        if indexed is None:
            return set()
        self._calls = None
        return {name for name, _site in indexed.calls}

    def _read(self, path: str, force: bool, budget: ReadingBudget) -> set[str]:
        """Read ``path`` again unless ``force`` is off and its size and modification time
        are those it was read at. Once ``budget`` is spent the file is left as it was
        (unknown, or with the calls of its last reading) and counted as left out."""
        try:
            status = os.stat(path)
        except OSError:
            return self._forget(path)
        stamp = (status.st_size, status.st_mtime_ns)
        known = self.files.get(path)
        if known is not None and known.stamp == stamp and not force:
            return set()
        if budget.spent():
            budget.left_out += 1
            return set()
        try:
            calls = _file_calls(path, self.root, budget)
        except ReadingBudgetSpent:
            budget.left_out += 1
            return set()
        self.files[path] = _IndexedFile(stamp, calls)
        self._calls = None
        before = {name for name, _site in known.calls} if known is not None else set()
        return before | {name for name, _site in calls}

    def _reading_order(self, path: str) -> tuple[int, str]:
        return _reading_order(os.path.relpath(path, self.root))

    def _said_left_out(self, budget: ReadingBudget, files: int) -> None:
        """A pass that ran out says so once: a class whose only call lies in a file left
        out is built as if none were written."""
        if budget.left_out:
            logger.warning(
                "fx-lsp left %d of the %d files of %s out of its search for constructor "
                "calls: a search reads at most %d MiB and %g s of CPU time "
                "(tests, examples and documents first); a class called only there is built "
                "as if no call were written.", budget.left_out, files, self.root,
                MAX_PASS_BYTES // (1024 * 1024), PASS_SECONDS)


def _reading_order(relative: str) -> tuple[int, str]:
    """Documents and notebooks first, then tests and examples, then the other files, each
    by path (``relative`` to the workspace root): those most likely to show how a class is
    called come before a pass runs out."""
    parts = relative.split(os.sep)
    name = parts[-1]
    if not name.endswith(".py"):
        return 0, relative
    if is_calling_file(parts[:-1], name) or "docs" in parts[:-1]:  # docs' scripts too
        return 1, relative
    return 2, relative


def _is_indexed_name(name: str) -> bool:
    return name.endswith(".py") or name.lower().endswith((*MARKDOWN_SUFFIXES,
                                                          NOTEBOOK_SUFFIX))


def _workspace_files(root: str) -> list[str]:
    """Python and Markdown files below ``root``, skipping what ``python_files`` skips, in one
    walk."""
    files = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [name for name in subfolders
                         if not name.startswith(".") and name not in SKIPPED_FOLDERS]
        files += [os.path.join(folder, name) for name in names if _is_indexed_name(name)]
    return sorted(files)


def _file_calls(path: str, root: str, budget: ReadingBudget) -> list[tuple[str, CallSite]]:
    """The literal constructor calls written in one file, named by its path below ``root``;
    none from a file the workspace's reader refuses (``fxcore.workspace.reading``: a link out
    of the workspace, not a regular file of bounded size, not UTF-8). Raises
    ``ReadingBudgetSpent`` when ``budget`` runs out on the way."""
    try:
        text = read_workspace_text(path, root, limit=MAX_NOTEBOOK_BYTES if is_notebook(path)
                                   else MAX_FILE_BYTES)
    except OSError:  # refused (UnreadableFile) or gone: no calls from it
        return []
    site_of = os.path.relpath(path, root)
    if is_notebook(path):
        return calls_in_notebook(text, site_of, budget)
    return (calls_in_markdown(text, site_of, budget)
            if path.lower().endswith(MARKDOWN_SUFFIXES)
            else calls_in_source(text, site_of, partial=True, budget=budget))


def build_index(root: str) -> CallSiteIndex:
    index = CallSiteIndex(root=root)
    index.rescan()
    return index


def most_varied(sites: list[CallSite], most: int) -> tuple[CallSite, ...]:
    """The first of ``sites`` (the call a reader meets first), then up to ``most - 1`` others,
    each the one that adds most not yet seen among those chosen: first keywords and nested
    classes (``alibi_pos_bias``, ``attn_layers=Decoder``: the variants that build other
    submodules), then literal values; ties go to the earlier call. Later calls are built only
    for the submodule classes they hold, so calls that differ in what they turn on cover more
    of a library than the first few written."""
    if not sites or most < 1:
        return ()
    chosen = [sites[0]]
    seen_variants, seen_values = _call_features(sites[0])
    remaining = [(site, *_call_features(site)) for site in sites[1:]]
    while remaining and len(chosen) < most:
        best = max(range(len(remaining)), key=lambda position: (
            len(remaining[position][1] - seen_variants),
            len(remaining[position][2] - seen_values), -position))
        site, variants, values = remaining.pop(best)
        chosen.append(site)
        seen_variants |= variants
        seen_values |= values
    return tuple(chosen)


def _call_features(site: CallSite) -> tuple[set[str], set[str]]:
    """What a call turns on: (its keywords and the classes of its nested calls, each by its
    place: ``attn_layers.rel_pos_bias``, ``attn_layers=Decoder``; its literal values by place:
    ``heads=8``)."""
    variants: set[str] = set()
    values: set[str] = set()
    arguments = [(f"[{position}]", source) for position, source in enumerate(site.args)]
    arguments += [(name, source) for name, source in site.kwargs]
    for place, source in arguments:
        if not place.startswith("["):
            variants.add(place)
        try:
            node = parse_expression(source).body
        except SyntaxError:
            continue
        _argument_features(place, node, variants, values)
    return variants, values


def _argument_features(place: str, node: ast.expr, variants: set[str],
                       values: set[str]) -> None:
    if not isinstance(node, ast.Call):
        values.add(f"{place}={ast.unparse(node)}")
        return
    variants.add(f"{place}={called_class_name(node)}")
    for position, argument in enumerate(node.args):
        _argument_features(f"{place}[{position}]", argument, variants, values)
    for keyword in node.keywords:
        variants.add(f"{place}.{keyword.arg}")
        _argument_features(f"{place}.{keyword.arg}", keyword.value, variants, values)


class CallSiteIndexes:
    """One index per workspace root, shared by every job of a pipeline
    (``fxcore.checking.pipeline``). Each is built on its first use and then kept current by
    ``changed`` (the server's file events) and by ``rescan_before_next_use`` (a workspace
    trace, a client without file events): a job never walks the workspace, so a run's cost
    stays linear in its files."""

    def __init__(self) -> None:
        self._indexes: dict[str, CallSiteIndex] = {}
        self._lock = threading.Lock()
        #: Set from the event loop, consumed by the next job: never waits for ``_lock``.
        self._rescan = threading.Event()

    def first_calls(self, root: str, names: Iterable[str]) -> dict[str, CallSite]:
        """Class name -> its first call in the workspace at ``root``, for those of ``names``
        that have one (under the lock: the server's file events update the index meanwhile)."""
        return {name: sites[0] for name, sites in self.calls(root, names, 1).items()}

    def calls(self, root: str, names: Iterable[str],
              most: int) -> dict[str, tuple[CallSite, ...]]:
        """Class name -> up to ``most`` of its calls in the workspace at ``root`` with different
        arguments (its first by file, then line; then the most varied: ``most_varied``), for
        those of ``names`` that have one."""
        with self._lock:
            index = self._current(root)
            found = {}
            for name in names:
                # A call repeated with the same arguments builds the same instance again.
                distinct: dict[tuple[tuple[str, ...], tuple[tuple[str, str], ...]], CallSite] = {}
                for site in index.for_class_all(name):
                    distinct.setdefault((site.args, site.kwargs), site)
                if distinct:
                    found[name] = most_varied(list(distinct.values()), most)
            return found

    def keyword_values(self, root: str,
                       names: Iterable[str]) -> dict[str, dict[str, tuple[str, ...]]]:
        """Class name -> parameter -> the literal values its partly literal calls in the
        workspace at ``root`` give it (``CallSiteIndex.keyword_values``), for those of
        ``names`` that have any."""
        with self._lock:
            index = self._current(root)
            found = {name: index.keyword_values(name) for name in names}
        return {name: values for name, values in found.items() if values}

    def _current(self, root: str) -> CallSiteIndex:
        """The index of the workspace at ``root``, rescanned if asked for; under the lock."""
        root = os.path.abspath(root)
        if self._rescan.is_set():
            self._rescan.clear()
            for index in self._indexes.values():
                index.rescan()
        index = self._indexes.get(root)
        if index is None:
            index = self._indexes[root] = build_index(root)
        return index

    def changed(self, paths: list[str]) -> dict[str, set[str]]:
        """Files (or folders) created, changed or deleted: update every built index that holds
        them. Workspace root -> the names of the classes whose calls may have changed."""
        found: dict[str, set[str]] = {}
        with self._lock:
            for path in map(os.path.abspath, paths):
                for root, index in self._indexes.items():
                    names = index.update(path)
                    if names:
                        found.setdefault(root, set()).update(names)
        return found

    def rescan_before_next_use(self) -> None:
        """Have the next job walk each built index's workspace once for changes no event
        announced (files changed outside the editor, with a client that sends no events)."""
        self._rescan.set()
