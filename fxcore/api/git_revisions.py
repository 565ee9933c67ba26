"""The git side of ``diff`` (``fxcore.api.revision_diff``): which Python files two revisions
differ in, which files import them (a static scan of ``import``/``from ... import``), and a
revision's files in a folder of their own, never the user's working tree or index."""

from __future__ import annotations

import ast
import contextlib
import io
import os
import shutil
import subprocess
import tarfile
from collections.abc import Iterable, Iterator

from fxcore.host.cache_folder import CACHE_FOLDER, make_cache_folder
from fxcore.workspace.parsing import ast_of

#: Below the repository's cache folder: each checked revision's files, by tree hash, with
#: their own result cache, which is all that is kept between runs.
CHECKOUTS = "diff"


class GitError(Exception):
    """git refused (not a repository, an unknown revision): one line for the user."""


def _git(root: str, *arguments: str) -> bytes:
    completed = subprocess.run(["git", "-C", root, *arguments], capture_output=True,
                               check=False)
    if completed.returncode != 0:
        message = completed.stderr.decode(errors="replace").strip().splitlines()
        raise GitError(f"git {' '.join(arguments)}: {message[-1] if message else 'failed'}")
    return completed.stdout


def _lines(output: bytes) -> list[str]:
    return [line for line in output.decode("utf-8", "surrogateescape").splitlines() if line]


def repository_root(folder: str) -> str:
    return _lines(_git(folder, "rev-parse", "--show-toplevel"))[0]


def tree_hash(root: str, revision: str) -> str:
    return _lines(_git(root, "rev-parse", "--verify", "--end-of-options",
                       f"{revision}^{{tree}}"))[0]


def changed_python_files(root: str, base: str, head: str | None) -> list[str]:
    """Repository-relative paths of the ``.py`` files that differ; ``head`` None is the
    working tree, whose new files not yet added count too."""
    # A renamed file under both names: its classes at BASE are under the old one.
    changed = set(_lines(_git(root, "diff", "--name-only", "--no-renames", base,
                              *([head] if head else []), "--", "*.py")))
    if head is None:
        changed |= set(_lines(_git(root, "ls-files", "--others", "--exclude-standard",
                                   "--", "*.py")))
    return sorted(changed)


def is_working_tree(root: str, revision: str) -> bool:
    """Whether the working tree holds exactly ``revision``'s files (no change, staged or not,
    and no file git does not ignore left untracked): it can then be checked in place."""
    same = subprocess.run(["git", "-C", root, "diff", "--quiet", revision, "--"],
                          capture_output=True, check=False).returncode == 0
    return same and not _lines(_git(root, "ls-files", "--others", "--exclude-standard"))


def python_files(folder: str) -> list[str]:
    """The ``.py`` files of the working tree (ignored ones left out), or of a checkout,
    which has no ``.git``."""
    if os.path.exists(os.path.join(folder, ".git")):
        return _lines(_git(folder, "ls-files", "--cached", "--others", "--exclude-standard",
                           "--", "*.py"))
    return _walk(folder)


def _walk(folder: str) -> list[str]:
    found = []
    for current, subfolders, files in os.walk(folder):
        subfolders[:] = [name for name in subfolders if not name.startswith(".")]
        found.extend(os.path.relpath(os.path.join(current, name), folder)
                     for name in files if name.endswith(".py"))
    return sorted(found)


def _module_names(path: str) -> set[str]:
    """``pkg/mod.py`` -> ``pkg.mod`` (and ``mod`` below a ``src/`` folder)."""
    parts = path.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    names = {".".join(parts)}
    if parts and parts[0] == "src":
        names.add(".".join(parts[1:]))
    return {name for name in names if name}


def _imported(path: str, text: str) -> set[str]:
    """Every module name a file imports, as written (``from a.b import c``: ``a.b`` and
    ``a.b.c``, which may be a module), without the parents Python imports first."""
    try:
        tree = ast_of(text)
    except (SyntaxError, ValueError):
        return set()
    package = path.removesuffix(".py").split("/")[:-1]
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *([node.module] if node.module else [])])
            names.add(module)
            names.update(f"{module}.{alias.name}" if module else alias.name
                         for alias in node.names)
    return {name for name in names if name}


def _with_parents(names: set[str]) -> set[str]:
    """The names with the parents ``import a.b`` also imports."""
    return {".".join(name.split(".")[:end]) for name in names
            for end in range(1, name.count(".") + 2)}


def importers(folder: str, changed: Iterable[str]) -> set[str]:
    """The Python files of ``folder`` that import one of the ``changed`` files, directly or
    through a package's ``__init__`` that imports one (``from timm.layers import Mlp``, whose
    ``timm/layers/__init__.py`` imports the changed ``timm/layers/mlp.py``)."""
    imports = {}
    for path in python_files(folder):
        try:
            with open(os.path.join(folder, path), encoding="utf-8") as source:
                imports[path] = _imported(path, source.read())
        except (OSError, UnicodeDecodeError):
            continue
    targets = set().union(*(_module_names(path) for path in changed))
    found = {path for path, names in imports.items() if _with_parents(names) & targets}
    packages = {name for path in found if path.endswith("__init__.py")
                for name in _module_names(path)}
    while packages:
        # Only a file naming the package itself: a sibling's ``from .x import y`` runs the
        # package's __init__ too, but following that would take in every file of the package.
        new = {path for path, names in imports.items() if names & packages} - found
        found |= new
        packages = {name for path in new if path.endswith("__init__.py")
                    for name in _module_names(path)}
    return found


@contextlib.contextmanager
def checkout(root: str, revision: str) -> Iterator[str]:
    """The files of ``revision`` (``git archive``) in ``<root>/.fx-lsp-cache/diff/<tree>/``:
    a path that stays the same for the same tree, so that the result cache, keyed by path
    and content, serves the next run. The files are removed afterwards; the folder's own
    cache folder is kept."""
    folder = os.path.join(root, CACHE_FOLDER, CHECKOUTS, tree_hash(root, revision))
    make_cache_folder(root)  # out of git, as check makes it: the working tree stays clean
    os.makedirs(folder, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(_git(root, "archive", "--format=tar", revision))
                      ) as archive:
        archive.extractall(folder, filter="data")
    try:
        yield folder
    finally:
        for name in os.listdir(folder):
            if name != CACHE_FOLDER:
                path = os.path.join(folder, name)
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.remove(path)
