"""Workspace code runs with an allowlisted environment: tokens and credentials of the editor
or the CI job are not passed unless ``[tool.fx-lsp] pass-env`` names them. Real CLI, real
workers: the class reports what it sees by raising it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fxcore.host.worker_environment import passed_variables, zygote_environment

SNOOP = """\
import os

import torch
from torch import nn

SEEN = sorted(name for name in os.environ
              if name.startswith(("FXT_", "GITHUB_", "AWS_", "HF_HOME", "HF_TOKEN")))


class Snoop(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("seen: " + ",".join(SEEN))
"""

SECRETS = {"GITHUB_TOKEN": "ghp_secret", "AWS_SECRET_ACCESS_KEY": "aws_secret",
           "HF_TOKEN": "hf_secret", "FXT_PLAIN": "plain", "FXT_TOKEN_TOO": "t",
           "HF_HOME": "/nonexistent/hf"}


def seen_by_workspace_code(root: Path, pass_env: list[str] | None) -> set[str]:
    table = f"\n[tool.fx-lsp]\npass-env = {json.dumps(pass_env)}\n" if pass_env else ""
    (root / "pyproject.toml").write_text("[project]\nname = 'w'\n" + table)
    (root / "model.py").write_text(SNOOP)
    done = subprocess.run(
        [sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--output-format", "json", "."],
        cwd=root, env={**os.environ, **SECRETS}, capture_output=True, text=True, timeout=240)
    (problem,) = json.loads(done.stdout)["diagnostics"]
    return set(problem["message"].partition("seen: ")[2].split(",")) - {""}


@pytest.mark.slow
def test_secrets_are_not_passed_to_workspace_code(tmp_path: Path) -> None:
    assert seen_by_workspace_code(tmp_path, None) == {"HF_HOME"}


def test_pass_env_names_variables_and_prefixes(tmp_path: Path) -> None:
    # A prefix passes no name that marks a secret: FXT_TOKEN_TOO would need naming in full.
    assert seen_by_workspace_code(tmp_path, ["GITHUB_TOKEN", "FXT_*"]) == {
        "GITHUB_TOKEN", "FXT_PLAIN", "HF_HOME"}


def test_a_prefix_never_passes_a_secret() -> None:
    environ = {"GITHUB_TOKEN": "t", "GIT_DIR": "d", "AWS_SECRET_ACCESS_KEY": "s", "A1": "1"}
    assert passed_variables(["G*", "A*"], environ) == {"GIT_DIR": "d", "A1": "1"}
    assert passed_variables(["G*", "GITHUB_TOKEN"], environ) == {"GITHUB_TOKEN": "t",
                                                                   "GIT_DIR": "d"}


def test_a_bad_pass_env_entry_is_a_config_problem(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.fx-lsp]\npass-env = ["A B"]\n')
    (tmp_path / "model.py").write_text("x = 1\n")
    done = subprocess.run([sys.executable, "-m", "fx_lsp", "check", "."], cwd=tmp_path,
                          capture_output=True, text=True, timeout=240)
    assert "'pass-env' takes variable names" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize(("name", "passed"), [
    ("PATH", True), ("LC_ALL", True), ("OMP_NUM_THREADS", True), ("CUDA_VISIBLE_DEVICES", True),
    ("TORCHINDUCTOR_CACHE_DIR", True), ("HF_HOME", True), ("FX_LSP_NO_PRELOAD", True),
    ("HF_TOKEN", False), ("GITHUB_TOKEN", False), ("AWS_ACCESS_KEY_ID", False),
    ("OPENAI_API_KEY", False), ("TORCH_SECRET", False), ("SSH_AUTH_SOCK", False),
])
def test_the_allowlist(name: str, passed: bool) -> None:
    assert (name in zygote_environment({name: "v"})) == passed
    assert passed_variables([name], {name: "v"}) == {name: "v"}
