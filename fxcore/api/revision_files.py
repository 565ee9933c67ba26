"""A revision's files in a folder of their own for ``diff`` (``fxcore.api.revision_diff``),
never the user's working tree or index: read from git's objects as they are stored (``git
ls-tree`` and ``git cat-file --batch``), so that no filter the revision's ``.gitattributes``
selects runs, as it would for a checkout or ``git archive``.

Nothing is written through a symbolic link: the files first, then the revision's links as git
stores them, each of which must lead to a place inside the revision once all are made; one
that leaves it, or a path no checkout writes (``..``, ``.git``), refuses the revision. The
folder is emptied after use, and after a failure."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass

from fxcore.api.git_revisions import GitError, run_git, tree_hash
from fxcore.host.cache_folder import CACHE_FOLDER, make_cache_folder
from fxcore.workspace.file_access import outside_target

#: Below the repository's cache folder: each checked revision's files, by tree hash, with
#: their own result cache, which is all that is kept between runs.
CHECKOUTS = "diff"
#: git's modes of the entries written: a file, an executable file, a symbolic link.
_FILE_MODES = {"100644": 0o644, "100755": 0o755}
_LINK_MODE = "120000"


@dataclass(frozen=True)
class _Entry:
    mode: str
    object_id: str
    #: Relative to the revision's top, ``/``-separated.
    path: str


def _entries(root: str, tree: str, revision: str) -> list[_Entry]:
    """The files and links of ``tree`` (a submodule's folder is left empty, as by
    ``git archive``); the revision's own result cache folder left out."""
    entries = []
    for record in run_git(root, "ls-tree", "-r", "-z", "--full-tree", tree).split(b"\0"):
        if not record:
            continue
        header, _, raw_path = record.partition(b"\t")
        mode, kind, object_id = header.decode().split(" ")
        path = raw_path.decode("utf-8", "surrogateescape")
        parts = path.split("/")
        if any(part in ("", ".", "..") or part.lower() == ".git" for part in parts):
            raise GitError(f"the revision {revision!r} holds the path {path!r}, which no "
                           "checkout writes; fx-lsp does not read it")
        if kind == "blob" and parts[0] != CACHE_FOLDER and (
                mode in _FILE_MODES or mode == _LINK_MODE):
            entries.append(_Entry(mode, object_id, path))
    return entries


def _contents(root: str, entries: list[_Entry]) -> list[bytes]:
    """Each entry's bytes as git stores them (``cat-file --batch`` runs no filter)."""
    output = run_git(root, "cat-file", "--batch",
                     stdin="".join(f"{entry.object_id}\n" for entry in entries).encode())
    contents, at = [], 0
    for entry in entries:
        end = output.find(b"\n", at)
        header = output[at:end].split(b" ")
        if end < 0 or len(header) != 3 or not header[2].isdigit():
            raise GitError(f"git cat-file --batch: {entry.path}: "
                           f"{output[at:end].decode(errors='replace') or 'no answer'}")
        size = int(header[2])
        contents.append(output[end + 1:end + 1 + size])
        at = end + 1 + size + 1
    return contents


def _empty(folder: str) -> None:
    """Remove everything of ``folder`` but its result cache; links removed, never followed."""
    for name in os.listdir(folder):
        if name != CACHE_FOLDER:
            path = os.path.join(folder, name)
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path)
            else:
                os.remove(path)


def _make_parent(folder: str, path: str) -> str:
    """The full path of ``path``, its folders made; refused when one of them is a link."""
    parts = path.split("/")
    for end in range(1, len(parts)):
        if os.path.islink(os.path.join(folder, *parts[:end])):
            raise GitError(f"{path}: {'/'.join(parts[:end])} is a symbolic link")
    full = os.path.join(folder, *parts)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    return full


def _extract(root: str, tree: str, revision: str, folder: str) -> None:
    entries = _entries(root, tree, revision)
    contents = _contents(root, entries)
    links = []
    for entry, data in zip(entries, contents, strict=True):
        if entry.mode == _LINK_MODE:
            links.append((entry.path, os.fsdecode(data)))
            continue
        full = _make_parent(folder, entry.path)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        with open(os.open(full, flags, _FILE_MODES[entry.mode]), "wb") as stream:
            stream.write(data)
    # Made once every file is written, so that no write goes through one; judged once all
    # are made, since one link can lead through another.
    for path, target in links:
        os.symlink(target, _make_parent(folder, path))
    for path, target in links:
        if outside_target(os.path.join(folder, *path.split("/")), folder) is not None:
            raise GitError(f"the revision {revision!r} holds {path!r}, a symbolic link to "
                           f"{target!r} outside the revision; fx-lsp does not follow it")


@contextlib.contextmanager
def checkout(root: str, revision: str) -> Iterator[str]:
    """The files of ``revision`` in ``<root>/.fx-lsp-cache/diff/<tree>/``: a path that stays
    the same for the same tree, so that the result cache, keyed by path and content, serves
    the next run. The files are removed afterwards, or when they cannot all be written; the
    folder's own cache folder is kept. ``GitError`` says why a revision cannot be read."""
    tree = tree_hash(root, revision)
    folder = os.path.join(root, CACHE_FOLDER, CHECKOUTS, tree)
    try:
        make_cache_folder(root)  # out of git, as check makes it: the working tree stays clean
        os.makedirs(folder, exist_ok=True)
        _empty(folder)  # what a run that was killed left
        _extract(root, tree, revision, folder)
    except OSError as error:
        with contextlib.suppress(OSError):
            _empty(folder)
        raise GitError(f"cannot write the files of the revision {revision!r} to {folder}: "
                       f"{error.strerror or error}") from error
    except GitError:
        with contextlib.suppress(OSError):
            _empty(folder)
        raise
    try:
        yield folder
    finally:
        with contextlib.suppress(OSError):  # what is left, the next run removes first
            _empty(folder)
