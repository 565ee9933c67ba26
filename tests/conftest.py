"""Fixtures for the engine and CLI tests: one real engine (zygote + forked workers) for the
whole session, and workspaces written to temporary folders."""

from __future__ import annotations

import os
import zlib
from collections import Counter
from pathlib import Path

import pytest

from fxcore.host.engine import Engine

from cli_support import close_shared_engine, shared_engine
from engine_support import Workspace, close_pipelines

pytest_plugins = ["worker_crashes"]

# No verdict a test compares may depend on the machine's load: the worker's budgets count its
# CPU time, and every wall-clock limit (the host's time-out of a class, the worker's backstops)
# is scaled out of the reach of any load (``fxcore.model.timeout_scale``). Set here, before any
# engine starts, for this process and every server, CLI and worker it starts. A test whose
# subject is a time-out sets the scale back to 1 (``unscaled_timeouts``).
os.environ.setdefault("FX_LSP_TIMEOUT_SCALE", "10")

#: Test modules that need more than the fast tier gives (pyproject.toml's ``addopts`` leaves
#: them out of a plain ``pytest``; scripts/test.sh runs them as their own tier): each says why.
SLOW_MODULES = {
    "test_installed_wheel.py": "builds the wheel and a virtual environment to install it in",
    "test_pre_commit.py": "installs pre-commit's hook environments",
    "test_recall.py": "one pass over the whole recall corpus against plain torch.fx",
    "test_quiet_output.py": "fx-lsp as a process: in a venv-like environment without numpy, "
                            "on a terminal, stopped by signals",
    "test_trace_after_cancel.py": "one test of over 20 s: a workspace trace cancelled, then "
                                  "another",
    "test_bounded_reads.py": "fx-lsp as a process under a memory cap and a time-out",
    "test_network_isolation.py": "fx-lsp as a process, as started and inside a user namespace",
    "test_isolation_processes.py": "fx-lsp as a process: pid files of everything a job starts",
    "test_security.py": "language servers probed as an attacker would: TCP, trust changes "
                        "mid-trace, each test its own server",
    "test_responsiveness.py": "servers kept busy with long traces while requests are timed",
    "test_scale_server.py": "a server over a large workspace",
    "test_robustness.py": "a server flooded with changes",
    "test_torch_versions.py": "fx-lsp processes that see faked torch versions",
}
E2E_MODULES = {"test_neovim.py": "drives a real Neovim"}
#: Matrix tests that every torch series runs whole, even a series given one shard of the
#: others (FX_LSP_MATRIX_SHARD): a failed warm-up is silent in use (the zygote only prints it);
#: the GPU's recorded answers are compared on the series they were recorded with, skipped on
#: the others.
EVERY_SERIES_MODULES = {"test_capture_warm_up.py", "test_gpu_recorded_answers.py"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        name = item.path.name
        if name in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
        if name in E2E_MODULES:
            item.add_marker(pytest.mark.e2e)
    # xdist hands a run's files out in this order (--dist loadfile, --no-loadscope-reorder):
    # the heavy files first (third-party sweeps, matrix sweeps: a few tests behind minutes of
    # set-up), then the files of most tests. xdist's own order, most tests first, started
    # the heavy files last, and one of them held the run's end on one process while the
    # others stood idle.
    tests_in = Counter(item.path for item in items)
    items.sort(key=lambda item: (not (item.get_closest_marker("thirdparty")
                                      or item.get_closest_marker("matrix_sweep")),
                                 -tests_in[item.path]))
    shard = os.environ.get("FX_LSP_MATRIX_SHARD")
    sweep_shard = os.environ.get("FX_LSP_MATRIX_SWEEP_SHARD")
    if shard or sweep_shard:
        kept: list[pytest.Item] = []
        left_out: list[pytest.Item] = []
        for item in items:
            own = sweep_shard if item.get_closest_marker("matrix_sweep") else shard
            (kept if not own or in_shard(item, own) else left_out).append(item)
        if left_out:
            config.hook.pytest_deselected(items=left_out)
            items[:] = kept


def in_shard(item: pytest.Item, shard: str) -> bool:
    """Whether ``item`` is in shard ``K/N`` (set by scripts/test-torch-matrix.sh:
    FX_LSP_MATRIX_SHARD, of the series that share the matrix tests, and
    FX_LSP_MATRIX_SWEEP_SHARD, of those that share the ``matrix_sweep`` ones): each test by a
    hash of its id, so that the N shards share every file's tests and, run on N series, run
    each test once; the EVERY_SERIES_MODULES in every shard."""
    if item.path.name in EVERY_SERIES_MODULES:
        return True
    number, count = (int(part) for part in shard.split("/"))
    return zlib.crc32(item.nodeid.encode()) % count == number - 1


def pytest_sessionfinish() -> None:
    close_pipelines()
    close_shared_engine()


@pytest.fixture(scope="session")
def engine() -> Engine:
    """The test process's warm engine, which the in-process CLI (``cli_support``) uses too."""
    return shared_engine()


@pytest.fixture
def workspace(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path)


@pytest.fixture
def unscaled_timeouts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Wall-clock limits at their own size (``FX_LSP_TIMEOUT_SCALE=1``), for a test whose
    subject is a time-out: the host's time-out of a class in this process, every limit of
    the servers, CLIs and engines the test starts, and the worker's backstops in this process.
    The shared engine's workers keep the scale their zygote started with: their backstops
    only stop a wait, after this process's time-out of the class has."""
    monkeypatch.setenv("FX_LSP_TIMEOUT_SCALE", "1")
