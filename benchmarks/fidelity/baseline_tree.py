"""This repository's files at an older commit, for timing that commit's fx-lsp in the same run.

The project's speed figures are ratios against a baseline measured in the same run, never
absolute times (benchmarks/README.md): issue 46's "no more than 1.5x the time it takes today"
is fx-lsp's check of the same folders, with the same options, by this tree and by the commit
named, one after the other on the same machine. The commit's files are taken with
``git archive`` into a temporary folder: nothing is added to the repository (no worktree is
registered) and the folder is removed afterwards.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator

from benchmarks.paths import REPOSITORY


@contextlib.contextmanager
def tree_at(commit: str) -> Iterator[str]:
    """A temporary folder holding the repository's tracked files as at ``commit``."""
    archive = subprocess.run(["git", "-C", REPOSITORY, "archive", "--format=tar", commit],
                             capture_output=True, check=True).stdout
    with tempfile.TemporaryDirectory(prefix=f"fx-lsp-{commit[:12]}-") as folder:
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(folder, filter="data")
        yield folder


def short_commit(commit: str) -> str:
    """The commit's abbreviated hash, as the table prints it."""
    return subprocess.run(["git", "-C", REPOSITORY, "rev-parse", "--short", commit],
                          capture_output=True, text=True, check=True).stdout.strip()
