"""Fixtures of the third-party fidelity tests: one plain-torch.fx ground truth and one
``fx-lsp check --format json`` run over ``tests/thirdparty/workspace``, each in a subprocess."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from once_per_run import once_per_run

from fx_lsp.cli.output_formats.json_report import parse_report

HERE = Path(__file__).resolve().parent
WORKSPACE = HERE / "workspace"
LIBRARIES = ("torchvision", "timm", "transformers")
#: Generous: on the 2-core machine both runs take about two to three minutes.
RUN_TIMEOUT = float(os.environ.get("FX_LSP_THIRDPARTY_TIMEOUT", "1500"))


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "thirdparty: fidelity tests on real torchvision/timm/transformers models "
        "(need scripts/install-thirdparty.sh; deselect with -m 'not thirdparty')",
    )
    config.addinivalue_line(
        "markers",
        "export_sweep: an export fidelity class outside the sample, run with "
        "FX_LSP_EXPORT_SWEEP=1 (benchmarks/fidelity/export_fidelity.py prints the whole sweep)",
    )


def wrapper_ids(files: tuple[str, ...] = ()) -> list[str]:
    """``file.py:Class`` of every class defined in the workspace files (found without imports),
    or in the named files (``tpmodels/x.py``) only."""
    paths = [WORKSPACE / name for name in files] or sorted((WORKSPACE / "tpmodels").glob("*.py"))
    return [f"{path.name}:{node.name}"
            for path in paths if not path.name.startswith("_")
            for node in ast.parse(path.read_text(encoding="utf-8")).body
            if isinstance(node, ast.ClassDef) and node.bases]  # nn.Module subclasses


def missing_libraries() -> list[str]:
    return [name for name in LIBRARIES if importlib.util.find_spec(name) is None]


def fx_lsp_command() -> list[str]:
    """fx-lsp of this interpreter's environment: an ``fx-lsp`` found on PATH may be another
    environment's (a torch-matrix venv runs its tests without being activated)."""
    return [sys.executable, "-m", "fx_lsp"]


class _Run:
    """A subprocess whose output is read while it runs, with a time limit."""

    def __init__(self, argv: list[str], cwd: Path) -> None:
        env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        self.argv = argv
        self.proc = subprocess.Popen(
            argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        self.out = self.err = ""
        self._thread = threading.Thread(target=self._communicate, daemon=True)
        self._thread.start()

    def _communicate(self) -> None:
        self.out, self.err = self.proc.communicate()

    def wait(self) -> subprocess.CompletedProcess:
        self._thread.join(RUN_TIMEOUT)
        if self._thread.is_alive():
            self.proc.kill()
            self._thread.join()
            pytest.fail(f"{' '.join(self.argv)} did not finish in {RUN_TIMEOUT:.0f} s")
        return subprocess.CompletedProcess(self.argv, self.proc.returncode, self.out, self.err)


@pytest.fixture(scope="session")
def thirdparty_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict]:
    """(ground truth, fx-lsp JSON), both computed in this test run, once: test_fidelity.py
    and test_shapes_real_models.py run in different xdist processes (``--dist loadfile``),
    which each ran both (minutes of the slow tier) before they shared one result."""
    missing = missing_libraries()
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (run scripts/install-thirdparty.sh)")
    truth, report = once_per_run(
        "thirdparty-runs", lambda: _both_runs(tmp_path_factory.mktemp("thirdparty")))
    return truth, report


def _both_runs(folder: Path) -> tuple[dict, dict]:
    out = folder / "ground_truth.json"
    # One after the other: on two cores, running both at once slows fx-lsp's workers down.
    truth = _Run(
        [sys.executable, str(HERE / "ground_truth.py"), "--quiet", "--out", str(out)], HERE
    ).wait()
    lsp = _Run(
        [*fx_lsp_command(), "check", "--no-cache", "--format", "json", str(WORKSPACE)], HERE
    ).wait()
    assert truth.returncode == 0, f"ground_truth.py failed:\n{truth.stderr[-4000:]}"
    assert lsp.returncode in (0, 1), f"fx-lsp check exited {lsp.returncode}:\n{lsp.stderr[-4000:]}"
    try:
        report = parse_report(lsp.stdout)
    except json.JSONDecodeError as exc:
        pytest.fail(f"fx-lsp check --format json printed no JSON ({exc}): {lsp.stdout[:2000]!r}")
    return parse_report(out.read_text()), report
