"""The workspace files that show how its classes are called, read for ``workspace_calls``: the
``.py`` files under a ``tests``, ``test``, ``examples`` or ``example`` folder of the workspace,
and ``test_*.py`` / ``*_test.py`` files, in the order a sorted walk meets them.

Each is read through ``fxcore.workspace.reading`` (links out of the workspace, FIFOs, devices,
files over ``MAX_BYTES`` and text that is not UTF-8 are refused, a byte-order mark is left
out) and parsed there (a file Python's parser gives up on is skipped), so a committed file
cannot make a worker hang, run out of memory or read what the file's own check says is not
read.

What a worker reads and parses of them is bounded for all the classes it checks together
(``Harvest``): at most ``MAX_FILES`` files, ``MAX_TOTAL_BYTES`` bytes and ``HARVEST_SECONDS``
of its time; each file is read once, and a class's search stops at the first call it runs on
(``workspace_calls.called_inputs`` yields the calls one by one).
"""

from __future__ import annotations

import ast
import functools
import os
from collections import OrderedDict
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

from fxcore.worker.running.budget_clock import Budget
from fxcore.workspace.calling_paths import is_calling_file
from fxcore.workspace.parsing import parse_module
from fxcore.workspace.reading import read_workspace_text

#: Folders never read: environments and caches, not the workspace's own code.
_SKIPPED = frozenset({"site-packages", "node_modules", "__pycache__", "build", "dist"})
#: The most files looked at: a large project's tests and examples.
MAX_FILES = 400
#: The largest calling file read: far above a hand-written test (a few thousand lines);
#: a larger one is generated data, not a call to learn from.
MAX_BYTES = 400_000
#: The most bytes read of all calling files together: a large project's tests whole (timm's
#: are under 1 MB, torchvision's about 3 MB), and parsed in well under a second a megabyte, so
#: that with ``HARVEST_SECONDS`` the search stays a small part of a class's 20 s time-out.
MAX_TOTAL_BYTES = 8 * 1024 * 1024
#: The most of a worker's time (CPU seconds, ``Budget``) spent reading, parsing and walking
#: calling files, for all its classes: a fifth of the default time-out, which is left for building,
#: running and capturing.
HARVEST_SECONDS = 4.0
T = TypeVar("T")

#: Trees kept parsed: those of the files that named the last classes looked for.
_TREES_KEPT = 8


class Harvest:
    """The calling files of one workspace, read as the classes of a worker ask for them."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.paths = _calling_paths(root)
        self._texts: dict[str, str | None] = {}
        self._trees: OrderedDict[str, ast.Module | None] = OrderedDict()
        self.bytes_left = MAX_TOTAL_BYTES
        self.seconds_spent = 0.0

    def spent(self) -> bool:
        """Whether the bytes or the time for reading calling files are used up."""
        return self.bytes_left <= 0 or self.seconds_spent >= HARVEST_SECONDS

    def calls_naming(self, name: str,
                     extract: Callable[[ast.Module], list[T]]) -> Iterator[tuple[str, list[T]]]:
        """(path relative to the root, ``extract(tree)``) of each calling file whose text
        holds ``name``, until the files or the harvest's bounds run out; the time ``extract``
        takes counts as the harvest's (walking a large file's tree takes longer than parsing
        it)."""
        for relative in self.paths:
            if relative not in self._texts:
                if self.spent():
                    return
                self._texts[relative] = self._read(relative)
            text = self._texts[relative]
            if text is None or name not in text:
                continue
            if self.spent():
                return
            clock = Budget()
            tree = self._tree(relative, text)
            found = extract(tree) if tree is not None else []
            self.seconds_spent += clock.spent()
            if found:
                yield relative, found

    def _read(self, relative: str) -> str | None:
        clock = Budget()
        try:
            text = read_workspace_text(os.path.join(self.root, relative), self.root, MAX_BYTES)
        except OSError:  # refused (UnreadableFile) or gone: no calls from it
            text = None
        self.seconds_spent += clock.spent()
        if text is not None:
            self.bytes_left -= len(text)
            if self.bytes_left < 0:  # past the bound: not read, as a later file is not
                return None
        return text

    def _tree(self, relative: str, text: str) -> ast.Module | None:
        if relative in self._trees:
            self._trees.move_to_end(relative)
            return self._trees[relative]
        try:
            tree: ast.Module | None = parse_module(text)
        except SyntaxError:  # also a source too deep or long for the parser
            tree = None
        self._trees[relative] = tree
        if len(self._trees) > _TREES_KEPT:
            self._trees.popitem(last=False)
        return tree


@functools.lru_cache(maxsize=4)
def harvest(root: str) -> Harvest:
    """The harvest of workspace ``root``, shared by every class of this process (a worker
    checks one file's classes)."""
    return Harvest(root)


def _calling_paths(root: str) -> tuple[str, ...]:
    """The paths, relative to ``root``, of the files that show how classes are called."""
    paths: list[str] = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = sorted(name for name in subfolders
                               if not name.startswith(".") and name not in _SKIPPED
                               and not (Path(folder, name) / "pyvenv.cfg").exists())
        relative = Path(folder).relative_to(root)
        for name in sorted(names):
            if is_calling_file(relative.parts, name):
                paths.append(str(relative / name))
                if len(paths) == MAX_FILES:
                    return tuple(paths)
    return tuple(paths)
