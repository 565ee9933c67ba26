"""Workspace code never runs in the zygote, and nothing a job starts outlives it: through the
real CLI, with markers and pid files written by the workspace code."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from engine_support import REPO_ROOT, is_running

#: Runs the CLI without putting the current folder on sys.path (as the `fx-lsp` script
#: does), so that only the engine's own start of the zygote is under test.
CLI = ("import sys; sys.path.pop(0); from fx_lsp.cli.main import main; sys.exit(main())")

MODEL = """
import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        return x + 1
"""


def run_cli(cwd: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    environment = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    return subprocess.run([sys.executable, "-c", CLI, "check", "--no-cache", *arguments],
                          cwd=cwd, env=environment, capture_output=True, text=True,
                          timeout=300)


def test_modules_in_the_current_folder_never_run_in_the_zygote(tmp_path: Path) -> None:
    markers = tmp_path / "markers"
    markers.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    for name in ("random", "copy", "uuid"):
        (project / f"{name}.py").write_text(
            f"open({str(markers / name)!r}, 'w').write('imported')\n")
    (project / "pyproject.toml").write_text(
        '[tool.fx-lsp]\nexclude = ["random.py", "copy.py", "uuid.py"]\n')
    (project / "model.py").write_text(MODEL)
    completed = run_cli(project, ".")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "1 traceable" in completed.stdout
    assert "Traceback" not in completed.stderr
    assert sorted(os.listdir(markers)) == []


BACKGROUND = """
import os
import subprocess

import torch
from torch import nn

PIDS = {pids!r}
started = [subprocess.Popen(["sleep", "1000"]).pid,
           subprocess.Popen(["sleep", "1001"], start_new_session=True).pid]
reader, writer = os.pipe()
if os.fork() == 0:  # a classic daemon: fork, new session, fork, parent exits
    os.setsid()
    daemon = os.fork()
    if daemon == 0:
        os.execvp("sleep", ["sleep", "1002"])
    os.write(writer, str(daemon).encode())
    os._exit(0)
started.append(int(os.read(reader, 32)))
with open(PIDS, "w") as handle:
    handle.write(" ".join(map(str, started)))


class Net(nn.Module):
    def forward(self, x):
        return x + 1
"""


def test_background_processes_neither_time_out_nor_outlive_the_cli(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[tool.fx-lsp]\ntimeout = 5\n")
    (project / "background.py").write_text(BACKGROUND.format(pids=str(pids)))
    started = time.monotonic()
    completed = run_cli(project, ".")
    seconds = time.monotonic() - started
    leftovers = [int(pid) for pid in pids.read_text().split() if is_running(int(pid))]
    for pid in leftovers:  # clean up what this test started before failing
        os.kill(pid, 9)
    assert leftovers == [], f"still running after the CLI exited ({seconds:.1f} s)"
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "FX102" not in completed.stdout
    assert "1 traceable" in completed.stdout


def test_os_fork_in_user_code_reports_every_class_once(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "forking.py").write_text(
        "import os\n" + MODEL + "\nos.fork()\n\n\nclass Other(Net):\n    pass\n")
    completed = run_cli(tmp_path, "--format", "json", ".")
    report = json.loads(completed.stdout)
    assert sorted(module["class"] for module in report["modules"]) == ["Net", "Other"]
    assert report["summary"]["traceable"] == 2
