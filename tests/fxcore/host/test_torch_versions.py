"""The torch version policy (fxcore/host/torch_versions.py) as users meet it: real ``fx-lsp``
processes
that see another torch version. The version is faked where fx-lsp reads it, the installed
distribution's metadata: a ``torch-X.dist-info`` folder first on PYTHONPATH shadows the real
one for ``importlib.metadata`` (the real torch 2.13 is still what workers import)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fxcore.host.torch_versions import (
    MINIMUM_SERIES,
    TESTED_SERIES,
    installed_torch_version,
    torch_support,
)

from engine_support import MARKING_MODEL, REPO_ROOT, fake_torch_metadata


def run_fx_lsp(workspace: Path, python_path: str, *arguments: str
               ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fx_lsp", *arguments], cwd=workspace,
                          env={**os.environ, "PYTHONPATH": python_path},
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def model_workspace(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "model.py").write_text(MARKING_MODEL)
    return workspace


def test_versions_are_judged_by_release_series() -> None:
    assert MINIMUM_SERIES <= TESTED_SERIES
    assert (MINIMUM_SERIES, TESTED_SERIES) == ((2, 10), (2, 15))
    for minor in range(MINIMUM_SERIES[1], TESTED_SERIES[1] + 1):
        for supported in (f"2.{minor}.0", f"2.{minor}.0+cpu", f"2.{minor}.1+cu128"):
            judged = torch_support(supported)
            assert (judged.refusal, judged.untested) == (None, None), supported
    source_build = torch_support("2.16.0a0+git1234abc")
    assert source_build.refusal is None and "not 2.16.0a0+git1234abc" in source_build.untested
    assert "\n" not in source_build.untested
    old = torch_support("2.5.1")
    assert old.refusal is not None and old.untested is None
    assert old.refusal.startswith("fx-lsp needs torch >= 2.10 (found 2.5.1)")
    for newer in (f"{TESTED_SERIES[0]}.{TESTED_SERIES[1] + 1}.0",
                  f"{TESTED_SERIES[0]}.{TESTED_SERIES[1] + 1}.0.dev20261101+cpu",
                  f"{TESTED_SERIES[0] + 1}.0.0", "nightly"):
        judged = torch_support(newer)
        assert judged.refusal is None and judged.untested is not None, newer
        assert f"not {newer}" in judged.untested
    missing = torch_support(None)
    assert missing.refusal is not None and "no torch" in missing.refusal


@pytest.mark.parametrize("command", [["check", "model.py"], ["graph", "model.py::Gate"]])
def test_an_older_torch_is_refused_before_any_worker_starts(
        model_workspace: Path, tmp_path: Path, command: list[str]) -> None:
    completed = run_fx_lsp(model_workspace, fake_torch_metadata(tmp_path / "fake", "2.5.1"),
                           *command)
    assert completed.returncode == 2
    assert completed.stdout == ""
    (line,) = completed.stderr.splitlines()
    assert line.startswith("fx-lsp needs torch >= 2.10 (found 2.5.1): ")
    assert not (model_workspace / "imported.txt").exists()  # no worker imported the model
    assert not (model_workspace / "Gate.graph.html").exists()


def test_a_newer_torch_runs_with_one_line_saying_it_is_untested(
        model_workspace: Path, tmp_path: Path) -> None:
    completed = run_fx_lsp(model_workspace, fake_torch_metadata(tmp_path / "fake", "2.16.0"),
                           "check", "--no-cache", "model.py")
    assert completed.returncode == 1, completed.stderr
    assert "model.py:16:12: FX001 [Gate] " in completed.stdout
    lines = completed.stderr.splitlines()
    untested = [line for line in lines if "untested" in line or "tested with torch" in line]
    assert untested == [torch_support("2.16.0").untested], completed.stderr
    assert untested[0].startswith("fx-lsp is tested with torch 2.10 to 2.15, not 2.16.0: it runs")


def test_the_tested_torch_gets_no_word_about_its_version(model_workspace: Path) -> None:
    completed = run_fx_lsp(model_workspace, str(REPO_ROOT), "check", "--no-cache", "model.py")
    assert completed.returncode == 1, completed.stderr
    assert "tested with torch" not in completed.stderr
    assert "needs torch" not in completed.stderr


def test_a_torch_without_metadata_is_judged_by_its_version_file(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.metadata

    import torch

    def no_metadata(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", no_metadata)
    assert installed_torch_version() == torch.__version__
