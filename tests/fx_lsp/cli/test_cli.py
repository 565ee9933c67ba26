"""``fx-lsp check`` as users and CI run it: a real subprocess over the example workspace."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from cli_support import fx_lsp
from engine_support import REPO_ROOT


def run_cli(*arguments: str, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess[str]:
    """The CLI without its cache, so each test traces for real (the cache has its own test)."""
    if arguments and arguments[0] == "check":
        arguments = ("check", "--no-cache", *arguments[1:])
    return fx_lsp(*arguments, cwd=cwd)


def test_text_output_over_the_examples() -> None:
    completed = run_cli("check", "examples")
    assert completed.returncode == 1, completed.stderr
    lines = completed.stdout.splitlines()
    pattern = re.compile(r"^examples/models/[\w/]+\.py:\d+:\d+: (FX\d{3}|note:) ")
    assert all(pattern.match(line) for line in lines[:-1]), lines
    assert "examples/models/pooling.py:14:24: FX002 [MeanPool] len() is called" in \
        completed.stdout
    # Reached from two classes: one line naming both, the class it is in first.
    assert "examples/models/layers.py:14:12: FX001 [ConvBlock; also reached from Encoder] " \
        in completed.stdout
    assert completed.stdout.count("examples/models/layers.py:14:12:") == 1
    assert lines[:-1] == sorted(lines[:-1], key=lambda line: (line.split(":")[0],
                                                              int(line.split(":")[1])))
    assert "examples/models/heads.py:11:9: FX200 [MultiTaskHead]" in completed.stdout
    # Projection is traced with guessed arguments: the summary says so.
    assert lines[-1] == ("Checked 10 files: 9 modules traced, 4 traceable, 5 failed, "
                         "0 not traced; 1 on guessed arguments.")
    assert completed.stderr == ""  # no progress bar when stderr is not a terminal


def test_json_output_shape() -> None:
    completed = run_cli("check", "--format", "json", "examples/models/pooling.py",
                        "examples/models/classifier.py", "examples/models/normalized.py")
    assert completed.returncode == 1
    report = json.loads(completed.stdout)
    modules = {m["class"]: m for m in report["modules"]}
    pool = modules["MeanPool"]
    assert pool["path"] == "examples/models/pooling.py"
    assert (pool["status"], pool["instantiated_on"], pool["line"]) == ("failed", "meta", 7)
    (failure,) = pool["failures"]
    assert {k: failure[k] for k in ("code", "kind", "path", "line", "column", "end_line",
                                    "end_column")} == {
        "code": "FX002", "kind": "len", "path": "examples/models/pooling.py", "line": 14,
        "column": 24, "end_line": 14, "end_column": 35}
    assert failure["frames"] == [{"path": "examples/models/pooling.py", "line": 14,
                                  "column": 24, "end_line": 14, "end_column": 35,
                                  "function": "forward"}]
    classifier = modules["Classifier"]
    assert (classifier["status"], classifier["instantiated_on"]) == ("traceable", "factory")
    assert classifier["node_count"] > 0 and classifier["failures"] == []
    projection = modules["Projection"]
    assert projection["status"] == "traceable"
    assert projection["arguments"] == {"from": "guessed", "args": [],
                                       "kwargs": {"in_dim": "64", "out_dim": "64"}}
    helper = modules["NormalizedEmbedding"]["failures"][0]
    assert helper["path"] == "examples/models/ops.py"
    assert [f["function"] for f in helper["frames"]] == ["forward", "clamp_norm"]
    trust = {"on_real_instances": 3, "on_guessed_arguments": 1}  # Projection's are guessed
    assert report["summary"] == {"files": 3, "traced": 4, "traceable": 2, "failed": 2,
                                 "not_traced": 0, "not_built": 0,
                                 "instance_does_not_fit": 0, **trust, "file_errors": 0,
                                 "cached": 0, "suppressed": 0, "baselined": 0, "classes": 4,
                                 "modes": {"fx": {"traced": 4, "traceable": 2, "failed": 2,
                                                  "not_traced": 0, "not_built": 0,
                                                  "instance_does_not_fit": 0,
                                                  "with_graph_breaks": 0, **trust}}}


def test_exit_code_zero_when_everything_traces() -> None:
    completed = run_cli("check", "examples/models/mlp.py", "examples/models/heads.py")
    assert completed.returncode == 0, completed.stdout
    assert completed.stdout.splitlines()[-1].startswith("Checked 2 files: 2 modules traced, "
                                                         "2 traceable, 0 failed")


def test_version_comes_from_the_package_metadata() -> None:
    version = run_cli("--version")
    assert version.returncode == 0
    assert version.stdout.splitlines()[0] == f"fx-lsp {importlib.metadata.version('fx-lsp')}"


def test_usage_errors_exit_with_two() -> None:
    assert run_cli("check").returncode == 2
    missing = run_cli("check", "no/such/folder")
    assert missing.returncode == 2
    assert "no such file or folder" in missing.stderr
    assert run_cli("check", "--workers", "0", "examples").returncode == 2


def test_file_errors_fail_the_run(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("def f(:\n")
    completed = run_cli("check", str(tmp_path / "broken.py"), cwd=tmp_path)
    assert completed.returncode == 1
    assert completed.stdout.startswith("broken.py:1:7: FX100 SyntaxError")


@pytest.mark.slow
def test_progress_bar_on_a_terminal() -> None:
    import pty

    controller, terminal = pty.openpty()
    try:
        completed = subprocess.run(
            [sys.executable, "-m", "fx_lsp", "check", "--no-cache", "examples/models/mlp.py",
             "examples/models/heads.py"],
            cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=terminal, text=True, timeout=300,
            env={**os.environ, "TERM": "xterm"})
        os.close(terminal)
        terminal = -1
        written = b""
        while True:
            try:
                chunk = os.read(controller, 4096)
            except OSError:
                break
            if not chunk:
                break
            written += chunk
    finally:
        if terminal != -1:
            os.close(terminal)
        os.close(controller)
    assert completed.returncode == 0
    assert b"2/2 files" in written


def test_exclude_means_the_same_in_the_cli_and_the_server(tmp_path: Path) -> None:
    """Each file is judged by the ``exclude`` of its own project (a nested pyproject.toml
    included), in ``fx-lsp check`` and in the jobs the server builds (``trace_jobs``)."""
    from fxcore.workspace.config import load_config
    from fxcore.workspace.paths import find_workspace_root, python_files, trace_jobs

    (tmp_path / "pyproject.toml").write_text('[tool.fx-lsp]\nexclude = ["legacy/*"]\n')
    (tmp_path / "legacy").mkdir()
    nested = tmp_path / "nested"
    nested.mkdir()
    (nested / "pyproject.toml").write_text('[tool.fx-lsp]\nexclude = ["gen_*.py"]\n')
    model = "from torch import nn\n\n\nclass M(nn.Module):\n    def forward(self, x):\n"
    (tmp_path / "legacy" / "old.py").write_text(model + "        return x * len(x)\n")
    (nested / "gen_layers.py").write_text(model + "        return x * len(x)\n")
    (tmp_path / "new.py").write_text(model + "        return x + 1\n")

    completed = run_cli("check", ".", cwd=tmp_path)
    assert completed.returncode == 0, completed.stdout
    assert "legacy" not in completed.stdout and "gen_layers" not in completed.stdout
    assert completed.stdout.splitlines()[-1].startswith("Checked 1 file:")
    jobs = trace_jobs(
        python_files([str(tmp_path)]),
        lambda path: find_workspace_root(path, [str(tmp_path)]),
        lambda root: load_config(root)[0],
    )
    assert [job.path for job in jobs] == [str(tmp_path / "new.py")]


def test_problems_with_different_messages_at_one_place_are_not_merged(tmp_path: Path) -> None:
    """Two classes reach one line of a helper with the same code but different messages:
    two problems, each with its own class's message, never one that hides the other's."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\nversion = '0'\n")
    (tmp_path / "net.py").write_text(
        "from torch import nn\n\n\n"
        "def check_width(x, width):\n"
        "    raise ValueError(f'width {width} is not supported')\n\n\n"
        "class Narrow(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return check_width(x, 4)\n\n\n"
        "class Wide(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return check_width(x, 64)\n"
        "\n\nclass Same(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return check_width(x, 64)\n")
    completed = run_cli("check", "--output-format", "json", ".", cwd=tmp_path)
    found = sorted((d["line"], d["code"], d["classes"], d["message"])
                   for d in json.loads(completed.stdout)["diagnostics"])
    assert found == [
        (5, "FX199", ["Narrow"], "Tracing stopped: ValueError: width 4 is not supported"),
        (5, "FX199", ["Wide", "Same"], "Tracing stopped: ValueError: width 64 is not supported"),
    ]


def test_a_class_whose_constructor_raised_could_not_be_built_it_did_not_fail(
        tmp_path: Path) -> None:
    """FX101 is reported (exit status 1) but counted apart: nothing was traced, so the
    summary says 'could not be built', not 'failed', in the terminal and in the JSON."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'ws'\nversion = '0'\n")
    (tmp_path / "net.py").write_text(
        "from torch import nn\n\n\n"
        "class Broken(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        raise ValueError('no weights here')\n\n"
        "    def forward(self, x):\n"
        "        return x\n\n\n"
        "class Fine(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return x + 1\n")
    completed = run_cli("check", ".", cwd=tmp_path)
    assert completed.returncode == 1
    assert "net.py:7:9: FX101 [Broken] Building Broken failed: ValueError" in completed.stdout
    assert completed.stdout.splitlines()[-1] == (
        "Checked 1 file: 1 modules traced, 1 traceable, 0 failed, 1 could not be built, "
        "0 not traced.")
    summary = json.loads(run_cli("check", "--output-format", "json", ".",
                                 cwd=tmp_path).stdout)["summary"]
    counts = {"traced": 1, "traceable": 1, "failed": 0, "not_traced": 0, "not_built": 1}
    assert {key: summary[key] for key in counts} == counts
    assert summary["modes"] == {"fx": {**counts, "with_graph_breaks": 0,
                                       "instance_does_not_fit": 0,
                                       "on_real_instances": 1, "on_guessed_arguments": 0}}
