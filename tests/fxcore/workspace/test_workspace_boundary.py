"""The workspace boundary holds for every file a check finds, not only for paths named: a
file that a symbolic link takes out of its workspace (the file a link, or a folder above it)
is one FX100 on its first line, and is neither imported nor read, whether a folder walk, the
language server's workspace trace, ``fx-lsp diff``'s check of the working tree or a path found
it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from fxcore.checking.pipeline import Pipeline, jobs_below
from fxcore.model.job_spec import EngineConfig
from fxcore.workspace.paths import find_workspace_root

from cli_support import fx_lsp, shared_engine

#: A model whose import leaves a marker beside the file that was really imported.
PLANTED = """\
import pathlib

pathlib.Path(__file__).resolve().with_name("IMPORTED").write_text("ran")

import torch


class Planted(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 1
"""

MODEL = """\
import torch


class Net(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 1
"""


def planted(tmp_path: Path) -> tuple[Path, Path]:
    """A workspace whose ``linked.py`` and ``linked_folder/`` lead to a folder outside it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "planted.py").write_text(PLANTED)
    root = tmp_path / "ws"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    (root / "model.py").write_text(MODEL)
    (root / "linked.py").symlink_to(outside / "planted.py")
    (root / "linked_folder").symlink_to(outside, target_is_directory=True)
    return root, outside


def test_a_folder_check_imports_no_file_a_link_takes_out_of_the_workspace(
        tmp_path: Path) -> None:
    root, outside = planted(tmp_path)
    done = fx_lsp("check", "--no-cache", ".", "linked_folder", cwd=root)
    lines = done.stdout.splitlines()
    refused = [line for line in lines if "leads out of the workspace" in line]
    assert [line.split(":")[0] for line in refused] == ["linked.py", "linked_folder/planted.py"], \
        done.stdout
    assert all(": FX100 " in line and str(outside / "planted.py") in line for line in refused)
    assert "Planted" not in done.stdout and not (outside / "IMPORTED").exists()
    assert done.returncode == 1, done.stderr
    # The workspace's own file is traced as before.
    assert "1 traceable" in lines[-1], done.stdout
    # The JSON report names the refusal by its own kind, which `diff` lists the files by.
    report = json.loads(fx_lsp("check", "--no-cache", "--output-format", "json", ".",
                               cwd=root).stdout)
    assert {(item["path"], error["kind"]) for item in report["files"]
            for error in item["errors"]} == {("linked.py", "linked-out")}, report["files"]


def test_the_server_s_workspace_jobs_refuse_a_link_out(tmp_path: Path) -> None:
    """The language server's workspace trace takes its jobs from ``jobs_below`` and runs them
    on a pipeline, as the command line and ``fx-lsp mcp`` do."""
    root, outside = planted(tmp_path)
    jobs = jobs_below([str(root)], find_workspace_root, lambda root: EngineConfig())
    pipeline = Pipeline(shared_engine())
    try:
        linked = [job for job in jobs if job.path.endswith("linked.py")]
        [result] = [pipeline.result_of(job) for job in linked]
    finally:
        pipeline.close()
    [error] = result.errors
    assert error.code == "FX100" and "leads out of the workspace" in error.message
    assert result.modules == [] and not (outside / "IMPORTED").exists()


def test_diff_of_the_working_tree_imports_no_file_a_link_takes_out(tmp_path: Path) -> None:
    """``fx-lsp diff HEAD`` checks the working tree as ``fx-lsp check`` does: an untracked link
    out of it is not imported (it was, and its class was reported as new in the diff), and is
    said in one line on stderr, and in the JSON report's ``refused``."""
    root, outside = planted(tmp_path)
    for arguments in (["init", "-q"], ["add", "pyproject.toml", "model.py"],
                      ["commit", "-qm", "one"]):
        subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t",
                        *arguments], check=True, capture_output=True)
    (root / "model.py").write_text(MODEL.replace("x + 1", "x + 2"))
    done = fx_lsp("diff", "HEAD", cwd=root)
    assert done.returncode == 0, done.stderr
    assert "HEAD (the working tree): " in done.stderr, done.stderr
    assert "Planted" not in done.stdout and not (outside / "IMPORTED").exists(), done.stdout
    [refused] = [line for line in done.stderr.splitlines() if "leads out of" in line]
    assert refused.startswith(f"HEAD: {root / 'linked.py'}: "), done.stderr
    assert str(outside / "planted.py") in refused
    report = json.loads(fx_lsp("diff", "--output-format", "json", "HEAD", cwd=root).stdout)
    assert [line.split(": ")[0] for line in report["refused"]] == [str(root / "linked.py")]
