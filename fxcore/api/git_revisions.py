"""The git side of ``diff`` (``fxcore.api.revision_diff``): which Python files two revisions
differ in, and which files import them (a static scan of ``import``/``from ... import``).
A revision's files are read by ``fxcore.api.revision_files``.

git runs here without anything the repository's configuration would have it run (``_git``):
no filter, no filesystem monitor, no hook, no textconv or external diff. A revision is
resolved to its tree first (``tree_hash``), so that what the user gave is only ever read as
a revision, never as an option."""

from __future__ import annotations

import ast
import os
import subprocess
from collections.abc import Iterable

from fxcore.workspace.parsing import parse_module
from fxcore.workspace.reading import read_workspace_text

#: Configuration that names programs git would run while it reads a repository, turned off
#: (as ``git -c``): a repository's own ``.git/config`` is its author's, not the user's.
NEUTRAL_CONFIG = {"core.fsmonitor": "", "core.hooksPath": os.devnull, "diff.external": "",
                  "core.alternateRefsCommand": ""}
#: The keys of a filter driver that name a program, and ``required``, which would make git
#: fail rather than read a file unfiltered.
_FILTER_KEYS = {"clean": "", "smudge": "", "process": "", "required": "false"}


class GitError(Exception):
    """git refused (not a repository, an unknown revision), or a revision fx-lsp will not
    read: one line for the user."""


def _environment(settings: dict[str, str]) -> dict[str, str]:
    """The environment that gives git ``settings`` as ``git -c`` would, whatever the key holds
    (``GIT_CONFIG_COUNT``: a filter's name may hold a ``=``), and never lets it fetch a
    missing object of a partial clone."""
    environment = {**os.environ, "GIT_CONFIG_COUNT": str(len(settings)),
                   "GIT_NO_LAZY_FETCH": "1", "GIT_TERMINAL_PROMPT": "0"}
    for index, (key, value) in enumerate(settings.items()):
        environment[f"GIT_CONFIG_KEY_{index}"] = key
        environment[f"GIT_CONFIG_VALUE_{index}"] = value
    return environment


def _run(root: str, arguments: tuple[str, ...], settings: dict[str, str],
         stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", "-C", root, *arguments], input=stdin, capture_output=True,
                          check=False, env=_environment(settings))


def _without_filters(root: str) -> dict[str, str]:
    """``NEUTRAL_CONFIG`` and every filter driver the configuration names, turned off: a
    filter runs where ``.gitattributes`` selects it, which the revision read decides."""
    listed = _run(root, ("config", "-z", "--name-only", "--get-regexp", r"^filter\."),
                  NEUTRAL_CONFIG)
    settings = dict(NEUTRAL_CONFIG)
    for key in listed.stdout.decode("utf-8", "surrogateescape").split("\0"):
        driver, _, name = key.rpartition(".")
        if driver and name in _FILTER_KEYS:
            settings.update({f"{driver}.{each}": value for each, value in _FILTER_KEYS.items()})
    return settings


def run_git(root: str, *arguments: str, stdin: bytes | None = None) -> bytes:
    """git's output, run in ``root`` without running any program its configuration names."""
    completed = _run(root, arguments, _without_filters(root), stdin)
    if completed.returncode != 0:
        message = completed.stderr.decode(errors="replace").strip().splitlines()
        raise GitError(f"git {' '.join(arguments)}: {message[-1] if message else 'failed'}")
    return completed.stdout


def _lines(output: bytes) -> list[str]:
    return [line for line in output.decode("utf-8", "surrogateescape").splitlines() if line]


def repository_root(folder: str) -> str:
    """The top folder of the git repository ``folder`` is in."""
    return _lines(run_git(folder, "rev-parse", "--show-toplevel"))[0]


def tree_hash(root: str, revision: str) -> str:
    """The tree of ``revision`` (a commit, branch, tag or tree), as a hash that no git
    command reads as an option; ``GitError`` when it is none."""
    try:
        return _lines(run_git(root, "rev-parse", "--verify", "--quiet", "--end-of-options",
                              f"{revision}^{{tree}}"))[0]
    except (GitError, IndexError) as error:
        raise GitError(f"{revision!r} is not a revision of the repository {root}") from error


def changed_python_files(root: str, base: str, head: str | None) -> list[str]:
    """Repository-relative paths of the ``.py`` files that differ; ``head`` None is the
    working tree, whose new files not yet added count too."""
    # A renamed file under both names: its classes at BASE are under the old one.
    trees = [tree_hash(root, base), *([tree_hash(root, head)] if head else [])]
    changed = set(_lines(run_git(root, "diff", "--name-only", "--no-renames", "--no-ext-diff",
                                 "--no-textconv", *trees, "--", "*.py")))
    if head is None:
        changed |= set(_lines(run_git(root, "ls-files", "--others", "--exclude-standard",
                                   "--", "*.py")))
    return sorted(changed)


def is_working_tree(root: str, revision: str) -> bool:
    """Whether the working tree holds exactly ``revision``'s files (no change, staged or not,
    and no file git does not ignore left untracked): it can then be checked in place."""
    same = _run(root, ("diff", "--quiet", "--no-ext-diff", "--no-textconv",
                       tree_hash(root, revision), "--"), _without_filters(root)).returncode == 0
    return same and not _lines(run_git(root, "ls-files", "--others", "--exclude-standard"))


def python_files(folder: str) -> list[str]:
    """The ``.py`` files of the working tree (ignored ones left out), or of a checkout,
    which has no ``.git``."""
    if os.path.exists(os.path.join(folder, ".git")):
        return _lines(run_git(folder, "ls-files", "--cached", "--others", "--exclude-standard",
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
        tree = parse_module(text)
    except SyntaxError:  # also a source too deep or long for the parser
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
            text = read_workspace_text(os.path.join(folder, path), folder)
        except OSError:  # refused (a link out, a FIFO, a device, too large, not UTF-8) or gone
            continue
        imports[path] = _imported(path, text)
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
