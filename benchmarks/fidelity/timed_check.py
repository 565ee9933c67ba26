"""fx-lsp's check of a library's folders, timed, by this tree or by an older commit's files
(``--baseline-ref``), in the same run.

The project's speed figures are ratios against a baseline measured in the same run, never
absolute times (docs/benchmarks/index.md): the library coverage's bound, fx-lsp's seconds no
more than 1.5x those of an earlier commit, compares fx-lsp's check of the same folders, with
the same options, by this tree and by the commit named, one after the other on the same
machine. The commit's files are taken with ``git archive`` into a temporary folder: nothing is
added to the repository (no worktree is registered) and the folder is removed afterwards.
"""

from __future__ import annotations

import contextlib
import io
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator

from benchmarks.fidelity.repo_coverage import Library
from benchmarks.paths import REPOSITORY, child_environment


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


def timed_check(library: Library, root: str, options: list[str],
                repository: str | None = None) -> tuple[str, float]:
    """fx-lsp's JSON report on the library's folders, run in its unpacked ``root`` with
    ``options``, and its seconds; this tree's fx-lsp, or the one in ``repository`` (an older
    commit's files), never an installed one's."""
    environment = child_environment(repository=repository) if repository else \
        child_environment()
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "fx_lsp", "check", "--no-cache", *options, "--output-format",
         "json", *library.folders],
        cwd=root, env=environment, capture_output=True, text=True, check=False)
    seconds = time.perf_counter() - started
    if completed.returncode not in (0, 1) or not completed.stdout.strip():
        raise RuntimeError(f"fx-lsp check failed on {library.name}:\n{completed.stderr}")
    return completed.stdout, seconds


def timed_pair(library: Library, root: str, options: list[str], baseline: str,
               repeat: int) -> tuple[str, float, float, str]:
    """This tree's report, its fastest seconds and the baseline's (fx-lsp in ``baseline``),
    each timed ``repeat`` times in turn, the order swapped every round (this tree first, then
    the baseline first: ABBA for 2), since the first run on a cold machine pays for the page
    cache and the later ones do not; and the baseline's report."""
    report, baseline_report, ours, theirs = "", "", [], []
    for round_number in range(repeat):
        for which in ((0, 1) if round_number % 2 == 0 else (1, 0)):
            if which == 0:
                report, seconds = timed_check(library, root, options)
                ours.append(seconds)
            else:
                baseline_report, seconds = timed_check(library, root, options, baseline)
                theirs.append(seconds)
    return report, min(ours), min(theirs), baseline_report
