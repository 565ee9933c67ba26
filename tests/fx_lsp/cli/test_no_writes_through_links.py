"""Nothing fx-lsp writes goes through a symbolic link a repository commits: the graph page, a
report, a merged report, ``--fix`` on a source or a ``pyproject.toml``. A link in the way is a
one-line error (or a fix not made), and the file it points at is left as it was."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fxcore.fixing.fix_plan import Fix, in_workspace
from fxcore.workspace.file_access import (
    UnsafeWrite,
    check_output_path,
    inside_workspace,
    write_output_text,
)
from fxcore.workspace.kept_bytes import replace_workspace_text

from cli_support import fx_lsp

LEN_MODEL = """\
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * len(x)
"""

EINOPS_MODEL = """\
import einops
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return einops.rearrange(x, "b c -> c b")
"""

PRECIOUS = "precious: not to be overwritten\n"


@pytest.fixture
def repository(tmp_path: Path) -> tuple[Path, Path]:
    """A checked-out repository and, outside it, a file of its user's."""
    outside = tmp_path / "home" / "notes.txt"
    outside.parent.mkdir()
    outside.write_text(PRECIOUS)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "pyproject.toml").write_text("[project]\nname = 'repo'\n")
    return repo, outside


def test_graph_page_is_not_written_through_a_committed_link(repository: tuple[Path, Path]):
    repo, outside = repository
    (repo / "model.py").write_text(LEN_MODEL.replace("x * len(x)", "x + 1"))
    (repo / "Net.graph.html").symlink_to(outside)
    done = fx_lsp("graph", "model.py::Net", cwd=repo)
    assert done.returncode == 2, done.stderr
    assert "Net.graph.html is a symbolic link" in done.stderr
    assert outside.read_text() == PRECIOUS
    assert (repo / "Net.graph.html").is_symlink()


def test_report_is_not_written_through_a_link_or_a_linked_folder(
        repository: tuple[Path, Path]):
    repo, outside = repository
    (repo / "model.py").write_text(LEN_MODEL)
    (repo / "report.json").symlink_to(outside)
    (repo / "reports").symlink_to(outside.parent, target_is_directory=True)
    for output in ("report.json", "reports/notes.txt"):
        done = fx_lsp("check", "--output-format", "json", "--output-file", output, ".",
                      cwd=repo)
        assert done.returncode == 2, done.stderr
        assert "symbolic link" in done.stderr and "Traceback" not in done.stderr
        # Refused before anything is traced: the run would take minutes for nothing.
        assert "Checked" not in done.stderr
    assert outside.read_text() == PRECIOUS


def test_merge_output_is_not_written_through_a_link(repository: tuple[Path, Path]):
    repo, outside = repository
    (repo / "model.py").write_text(LEN_MODEL)
    shard = fx_lsp("check", "--output-format", "json", "--shard", "1/1", "--output-file",
                   "shard.json", ".", cwd=repo)
    assert shard.returncode == 1, shard.stderr
    (repo / "merged.json").symlink_to(outside)
    done = fx_lsp("merge", "shard.json", "--output-file", "merged.json", cwd=repo)
    assert done.returncode == 2 and "merged.json is a symbolic link" in done.stderr
    assert outside.read_text() == PRECIOUS


def test_fix_does_not_edit_a_source_linked_out_of_the_workspace(
        repository: tuple[Path, Path]):
    repo, _ = repository
    elsewhere = repo.parent / "home" / "model.py"
    elsewhere.write_text(LEN_MODEL)
    (repo / "model.py").symlink_to(elsewhere)
    done = fx_lsp("check", "--fix", "--unsafe-fixes", ".", cwd=repo)
    # Refused before it is read (the workspace boundary): no problem of it to fix.
    assert "model.py:1:1: FX100 This file is a symbolic link" in done.stdout, done.stdout
    assert "leads out of the workspace" in done.stdout
    assert "Fixed 0 problems in 0 files." in done.stderr, done.stderr
    assert elsewhere.read_text() == LEN_MODEL
    assert (repo / "model.py").is_symlink()


def test_pyproject_linked_out_of_the_workspace_gets_no_fix(repository: tuple[Path, Path]):
    pytest.importorskip("einops")
    repo, outside = repository
    (repo / "model.py").write_text(EINOPS_MODEL)
    plain = fx_lsp("check", "--diff", ".", cwd=repo)
    assert "autowrap-modules" in plain.stdout, plain.stdout + plain.stderr
    (repo / "pyproject.toml").unlink()
    outside.write_text("[project]\nname = 'repo'\n")
    (repo / "pyproject.toml").symlink_to(outside)
    done = fx_lsp("check", "--fix", ".", cwd=repo)
    assert "autowrap" not in done.stderr and "leads out of the workspace" in done.stderr
    assert outside.read_text() == "[project]\nname = 'repo'\n"


def test_the_planner_keeps_only_fixes_inside_their_workspace(tmp_path: Path):
    root = tmp_path / "repo"
    root.mkdir()
    (tmp_path / "pyproject.toml").write_text("")
    (root / "pyproject.toml").symlink_to(tmp_path / "pyproject.toml")
    (root / "model.py").write_text(LEN_MODEL)
    fixes = [Fix("edit the model", str(root / "model.py"), str.upper),
             Fix("edit pyproject", str(root / "pyproject.toml"), str.upper)]
    kept, refused = in_workspace(fixes, lambda path: str(root))
    assert [fix.title for fix in kept] == ["edit the model"]
    assert len(refused) == 1 and "pyproject.toml is a symbolic link" in refused[0]


def test_output_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "real").mkdir()
    (tmp_path / "linked").symlink_to(tmp_path / "real", target_is_directory=True)
    (tmp_path / "file.txt").symlink_to(tmp_path / "real" / "target.txt")
    check_output_path("real/out.json")
    check_output_path(str(tmp_path / "linked" / "out.json"))  # the user's own absolute path
    for refused in ("linked/out.json", "file.txt", "./linked/../linked/out.json"):
        with pytest.raises(UnsafeWrite):
            check_output_path(refused)
    write_output_text("real/out.json", "{}")
    assert (tmp_path / "real" / "out.json").read_text() == "{}"
    assert not (tmp_path / "real" / "target.txt").exists()


def test_workspace_paths(tmp_path: Path):
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    (tmp_path / "out").mkdir()
    (root / "pkg" / "a.py").write_text("a\n")
    (root / "alias.py").symlink_to(root / "pkg" / "a.py")
    (root / "escape").symlink_to(tmp_path / "out", target_is_directory=True)
    assert inside_workspace(str(root / "alias.py"), str(root)) == os.path.realpath(
        root / "pkg" / "a.py")
    replace_workspace_text(str(root / "alias.py"), "b\n", str(root))
    assert (root / "pkg" / "a.py").read_text() == "b\n" and (root / "alias.py").is_symlink()
    with pytest.raises(UnsafeWrite):
        replace_workspace_text(str(root / "escape" / "b.py"), "x\n", str(root))
    assert not (tmp_path / "out" / "b.py").exists()
