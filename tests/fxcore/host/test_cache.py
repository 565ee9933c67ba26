"""The result cache: reused while nothing a trace depended on changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fxcore.checking.pipeline import Pipeline
from fxcore.host.cache import CACHE_FOLDER, ResultCache
from fxcore.host.engine import Engine
from fxcore.model.job_spec import EngineConfig, TraceJob

from cli_support import fx_lsp
from engine_support import Workspace, check_job


def write_package(workspace: Workspace) -> tuple[Path, Path]:
    workspace.write("pkg/__init__.py", "")
    layers = workspace.write("pkg/layers.py", "def act(x):\n    return x.relu()\n")
    net = workspace.write("pkg/net.py", """
        from torch import nn

        from .layers import act


        class Net(nn.Module):
            def forward(self, x):
                return act(x)
        """)
    return layers, net


def test_hits_until_an_imported_file_changes(engine: Engine, workspace: Workspace) -> None:
    layers, net = write_package(workspace)
    cache = ResultCache()
    job = TraceJob(path=str(net), workspace_root=str(workspace.root))
    assert cache.get(job) is None
    cache.put(job, check_job(engine, job))
    cached = cache.get(job)
    assert cached is not None and cached.from_cache
    assert cached.modules[0].status == "traceable"

    # An unsaved buffer of a dependency is a change too.
    edited = {str(layers): "def act(x):\n    return x.relu() * len(x)\n"}
    assert cache.get(TraceJob(path=str(net), workspace_root=str(workspace.root),
                              overlays=edited)) is None
    assert cache.get(TraceJob(path=str(net), workspace_root=str(workspace.root),
                              config=EngineConfig(timeout=5))) is None
    layers.write_text("def act(x):\n    return -x\n")
    assert cache.get(job) is None
    assert (workspace.root / CACHE_FOLDER / ".gitignore").read_text().endswith("*\n")


@pytest.mark.usefixtures("unscaled_timeouts")
def test_time_outs_are_not_cached(engine: Engine, workspace: Workspace) -> None:
    path = workspace.write("slow.py", """
        import time
        from torch import nn


        class Slow(nn.Module):
            def forward(self, x):
                time.sleep(30)
                return x
        """)
    job = TraceJob(path=str(path), workspace_root=str(workspace.root),
                   config=EngineConfig(timeout=1.0))
    result = check_job(engine, job)
    assert result.modules[0].failures[0].kind == "timeout"
    cache = ResultCache()
    cache.put(job, result)
    assert cache.get(job) is None


def test_cli_second_run_comes_from_the_cache(workspace: Workspace) -> None:
    write_package(workspace)

    def check(*extra: str) -> dict:
        completed = fx_lsp("check", "--format", "json", *extra, "pkg", cwd=workspace.root)
        assert completed.returncode == 0, completed.stderr
        return json.loads(completed.stdout)

    first = check()
    second = check()
    assert first["modules"] == second["modules"]
    assert (first["summary"]["cached"], second["summary"]["cached"]) == (0, 3)
    assert check("--no-cache")["summary"]["cached"] == 0


def test_the_pipeline_answers_from_the_cache_without_a_worker(workspace: Workspace) -> None:
    _, net = write_package(workspace)
    job = TraceJob(path=str(net), workspace_root=str(workspace.root))
    first_engine = Engine(workers=1)
    first = Pipeline(first_engine, ResultCache())
    try:
        assert not first.result_of(job).from_cache
    finally:
        first_engine.close()
        first.close()
    second_engine = Engine(workers=1)
    second = Pipeline(second_engine, ResultCache())
    try:
        cached = second.result_of(job)
        assert cached.from_cache and cached.modules[0].status == "traceable"
        assert second_engine._zygote is None  # no worker was ever started
    finally:
        second_engine.close()
        second.close()
