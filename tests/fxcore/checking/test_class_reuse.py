"""A save re-traces only the classes whose code, or the code they reach, changed: the others'
verdicts are kept per class (``fxcore.host.class_cache``), moved with their class, and equal
to what a fresh trace of the edited file gives."""

from __future__ import annotations

import dataclasses
import json
import textwrap
from collections.abc import Iterator
from typing import Any

import pytest

from fxcore.checking.pipeline import Pipeline
from fxcore.host.cache import ResultCache
from fxcore.host.engine import Engine
from fxcore.model.job_spec import EngineConfig, TraceJob
from fxcore.model.results import FileResult, ModuleResult

from cli_support import fx_lsp
from engine_support import Workspace

SOURCE = textwrap.dedent('''\
    """Two models: one reaches a helper, the other nothing of the file."""

    import torch
    from torch import nn


    def helper(x):
        return x * 2


    class Uses(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = nn.Linear(4, 4)
            self.unused = nn.Linear(4, 4)

        def forward(self, x):
            return helper(self.linear(x))


    class Alone(nn.Module):
        def forward(self, x):
            print("a debugging print")
            if x.sum() > 0:
                return x
            return -x
    ''')
#: Uses' helper now branches on tensor data: Uses' verdicts change.
HELPER_BRANCHES = SOURCE.replace("    return x * 2\n",
                                 "    if x.sum() > 0:\n        return x\n    return x * 2\n")

MODES = [("fx",), pytest.param(("fx", "export", "compile"), marks=pytest.mark.slow)]


def comparable(module: ModuleResult) -> ModuleResult:
    """A verdict without how long it took."""
    return dataclasses.replace(module, trace_seconds=0.0, loop_seconds=0.0, shape_seconds=0.0)


def same(reused: FileResult, fresh: FileResult) -> None:
    assert [comparable(module) for module in reused.modules] == \
        [comparable(module) for module in fresh.modules]
    assert reused.errors == fresh.errors
    assert reused.derived_modules == fresh.derived_modules == []


def untimed(data: Any) -> Any:
    """A JSON report's part without how long anything took."""
    if isinstance(data, dict):
        return {key: untimed(value) for key, value in data.items()
                if not key.endswith("seconds")}
    if isinstance(data, list):
        return [untimed(item) for item in data]
    return data


@pytest.fixture
def cached(engine: Engine) -> Iterator[Pipeline]:
    pipeline = Pipeline(engine, ResultCache())
    yield pipeline
    pipeline.close()


@pytest.fixture
def fresh(engine: Engine) -> Iterator[Pipeline]:
    pipeline = Pipeline(engine, None)
    yield pipeline
    pipeline.close()


@pytest.mark.parametrize("modes", MODES)
def test_unchanged_classes_are_reused_and_equal_a_fresh_trace(
        cached: Pipeline, fresh: Pipeline, workspace: Workspace, modes: tuple[str, ...]) -> None:
    path = workspace.write("models.py", SOURCE)
    job = TraceJob(path=str(path), workspace_root=str(workspace.root),
                   config=EngineConfig(modes=modes))
    first = cached.result_of(job)
    assert [module.class_name for module in first.modules] == \
        [name for name in ("Uses", "Alone") for _ in modes]
    classes = cached.classes
    assert classes is not None and classes.hits == 0

    # Lines above, a constant after: both classes are reused, moved three lines down.
    path.write_text("# edit 1\n\n\n" + SOURCE + "_EDIT_NUMBER = 1\n")
    reused = cached.result_of(job)
    assert classes.hits == 2
    same(reused, fresh.result_of(job))
    assert [module.line for module in reused.modules] == \
        [module.line + 3 for module in first.modules]

    # The helper Uses calls changes: Uses is traced again, Alone still reused.
    path.write_text("# edit 2\n\n\n" + HELPER_BRANCHES + "_EDIT_NUMBER = 2\n")
    edited = cached.result_of(job)
    assert classes.hits == 3
    same(edited, fresh.result_of(job))
    assert edited.modules[0] != reused.modules[0]


def test_an_import_error_is_found_under_reused_classes(
        cached: Pipeline, fresh: Pipeline, workspace: Workspace) -> None:
    path = workspace.write("models.py", SOURCE)
    job = TraceJob(path=str(path), workspace_root=str(workspace.root))
    cached.result_of(job)
    # An assignment no class reaches keeps every key, but the file no longer imports.
    path.write_text(SOURCE + "_BROKEN = 1 / 0\n")
    broken = cached.result_of(job)
    assert cached.classes is not None and cached.classes.hits == 2
    assert broken.modules == []
    assert [error.code for error in broken.errors] == ["FX100"]
    same(broken, fresh.result_of(job))


def test_a_moved_class_keeps_its_forward_line(cached: Pipeline, workspace: Workspace) -> None:
    path = workspace.write("models.py", SOURCE)
    job = TraceJob(path=str(path), workspace_root=str(workspace.root))
    cached.result_of(job)
    path.write_text("\n" + SOURCE)
    moved = cached.result_of(job)
    assert cached.classes is not None and cached.classes.hits == 2
    uses = moved.modules[0]
    assert uses.forward is not None and path.read_text().splitlines()[
        uses.forward.line - 1].strip().startswith("def forward")


def test_the_cli_reports_the_same_with_kept_verdicts(workspace: Workspace) -> None:
    path = workspace.write("models.py", SOURCE)

    def report(*extra: str) -> dict:
        completed = fx_lsp("check", "--format", "json", "--exit-zero", *extra, "models.py",
                           cwd=workspace.root)
        assert completed.returncode == 0, completed.stderr
        return json.loads(completed.stdout)

    first = report()
    path.write_text("# edit 1\n\n" + SOURCE + "_EDIT_NUMBER = 1\n")
    kept, fresh = report(), report("--no-cache")
    assert untimed(kept["modules"]) == untimed(fresh["modules"])
    # Kept, not traced again: the verdicts took as long as they did the first time.
    assert [module["trace_seconds"] for module in kept["modules"]] == \
        [module["trace_seconds"] for module in first["modules"]]
    assert kept["modules"][0]["line"] == SOURCE.splitlines().index("class Uses(nn.Module):") + 3
