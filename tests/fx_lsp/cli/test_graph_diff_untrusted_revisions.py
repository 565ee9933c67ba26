"""``fx-lsp diff`` on a repository whose revisions and configuration are not to be trusted:
a revision is read as git stores it (no filter, no fsmonitor runs), a symbolic link leaving
the revision is refused and nothing of the revision is left behind, and a revision is only
ever a revision, never an option for git. Each refusal is one line and exit status 2, never
the status ``--fail-on regression`` gives a regression."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from cli_support import fx_lsp

MODEL = "from torch import nn\n\n\nclass Plain(nn.Module):\n    def forward(self, x):\n" \
        "        return x + {}\n"


def git(root: Path, *arguments: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t",
                    *arguments], check=True, capture_output=True)


def two_commits(root: Path, first: dict[str, str] | None = None,
                files: dict[str, str] | None = None) -> Path:
    """models.py committed twice (the second commit changes it), with ``first``'s links
    (name: target) in the first commit only, and ``files`` (name: text) in both."""
    root.mkdir()
    git(root, "init", "-q")
    (root / "models.py").write_text(MODEL.format(1))
    for name, text in (files or {}).items():
        (root / name).write_text(text)
    for name, target in (first or {}).items():
        os.symlink(target, root / name)
    git(root, "add", "-A")
    git(root, "commit", "-qm", "one")
    for name in first or {}:
        git(root, "rm", "-q", name)
    (root / "models.py").write_text(MODEL.format(2))
    git(root, "commit", "-qam", "two")
    return root


def left_in_cache(root: Path) -> list[str]:
    """What the checkouts' folder holds, but each checkout's own result cache."""
    checkouts = root / ".fx-lsp-cache" / "diff"
    return sorted(str(path.relative_to(checkouts)) for path in checkouts.rglob("*")
                  if ".fx-lsp-cache" not in path.relative_to(checkouts).parts[1:]
                  and path.parent != checkouts) if checkouts.exists() else []


@pytest.mark.parametrize("links", [{"escape": "/etc"}, {"escape": "../.."},
                                   {"escape": "sub/../../.."},
                                   # Each inside on its own; one through the other leaves.
                                   {"dot": ".", "escape": "dot/.."}])
def test_a_link_out_of_the_revision_is_refused_and_nothing_is_left(
        tmp_path: Path, links: dict[str, str]) -> None:
    root = two_commits(tmp_path / "repo", links)
    for options in ([], ["--fail-on", "regression"]):
        completed = fx_lsp("diff", "HEAD~1", "HEAD", *options, cwd=root)
        assert completed.returncode == 2, completed.stderr
        lines = completed.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("fx-lsp diff: "), completed.stderr
        assert "escape" in lines[0] and "symbolic link" in lines[0], lines
        assert completed.stdout == ""
        assert left_in_cache(root) == [], left_in_cache(root)


def test_a_link_inside_the_revision_is_kept_as_a_link(tmp_path: Path) -> None:
    root = two_commits(tmp_path / "repo", {"alias.py": "models.py"})
    completed = fx_lsp("diff", "HEAD~1", "HEAD", "--output-format", "json", cwd=root)
    assert completed.returncode == 0, completed.stderr
    assert '"class": "Plain"' in completed.stdout
    assert left_in_cache(root) == []


def test_a_revision_is_never_an_option(tmp_path: Path) -> None:
    root = two_commits(tmp_path / "repo")
    written = tmp_path / "written"
    for revision in (f"--output={written}", "-c", "--no-index"):
        completed = fx_lsp("diff", "--", revision, cwd=root)
        assert completed.returncode == 2, (revision, completed)
        assert completed.stderr.splitlines() == [
            f"fx-lsp diff: {revision!r} is not a revision of the repository {root}"], \
            completed.stderr
        assert "No class's graphs changed." not in completed.stdout
        completed = fx_lsp("diff", "HEAD~1", "--", revision, cwd=root)
        assert completed.returncode == 2, (revision, completed)
    assert not written.exists()


def test_no_filter_or_fsmonitor_of_the_repository_runs(tmp_path: Path) -> None:
    root = two_commits(tmp_path / "repo", files={".gitattributes": "*.py filter=evil\n"})
    ran = tmp_path / "ran"
    ran.mkdir()
    for name in ("smudge", "clean", "fsmonitor"):
        script = tmp_path / f"{name}.sh"
        script.write_text(f"#!/bin/sh\ntouch {ran / name}\ncat\n")
        script.chmod(0o755)
    (root / "models.py").write_text(MODEL.format(3))  # the working tree differs from HEAD
    for key, value in (("filter.evil.smudge", "smudge.sh"), ("filter.evil.clean", "clean.sh"),
                       ("filter.evil.required", None), ("core.fsmonitor", "fsmonitor.sh")):
        git(root, "config", key, "true" if value is None else str(tmp_path / value))
    os.utime(root / "models.py", (0, 0))  # stat-dirty: git would hash it through `clean`
    completed = fx_lsp("diff", "HEAD~1", "--output-format", "json", cwd=root)
    assert completed.returncode == 0, completed.stderr
    assert '"class": "Plain"' in completed.stdout
    assert sorted(path.name for path in ran.iterdir()) == []
