"""One corpus file fixed by ``fx-lsp check --mode compile --fix --unsafe-fixes`` and measured
with real torch (``aot_eager``) before and after, through the fix-all corpus test's workspace
and measuring helpers (tests/fxcore/fixing/test_fix_all_corpus.py): the fix tests that prove a
fix on compiled outputs share it."""

from __future__ import annotations

import importlib.util
import shutil
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

FIX_ALL_CORPUS_TEST = Path(__file__).resolve().parents[1] / "fxcore" / "fixing" / \
    "test_fix_all_corpus.py"


def fix_all_corpus() -> ModuleType:
    """The fix-all corpus test's module: its workspace and measuring helpers."""
    spec = importlib.util.spec_from_file_location("fix_all_corpus", FIX_ALL_CORPUS_TEST)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass
class FixedRun:
    path: Path
    inputs: dict[str, Any]
    log: str
    #: Per class: breaks, graphs, error and options measured before and after the fixes.
    before: dict[str, Any]
    after: dict[str, Any]
    #: Per class: the eager and compiled outputs before and after.
    was: dict[str, Any]
    now: dict[str, Any]


def fixed_and_measured(corpus_file: Path, tmp_path: Path) -> FixedRun:
    """``corpus_file`` copied into a workspace with its classes' inputs configured, measured,
    fixed by fix-all, measured again."""
    import torch

    corpus = fix_all_corpus()
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    path = workspace / corpus_file.name
    shutil.copy(corpus_file, path)
    inputs = corpus.class_inputs(path)
    corpus.write_pyproject(workspace, {path.stem: inputs})
    before = corpus.measured(path, tmp_path / "before.pt", "aot_eager")
    log = corpus.fix_all(workspace)
    after = corpus.measured(path, tmp_path / "after.pt", "aot_eager")
    was, now = (torch.load(tmp_path / f"{when}.pt", weights_only=False)
                for when in ("before", "after"))
    return FixedRun(path, inputs, log, before, after, was, now)


def assert_breaks_gone_outputs_kept(run: FixedRun, name: str) -> None:
    """``name`` met a break before, none after, and its eager and compiled outputs are the
    same before and after (and compiled as eager)."""
    same = fix_all_corpus().same
    assert run.before[name]["breaks"], f"{name} meets no break unfixed"
    assert run.after[name]["breaks"] == [] and run.after[name]["error"] is None, run.after[name]
    assert same(run.was[name]["eager"], run.now[name]["eager"]), name
    assert same(run.was[name]["eager"], run.was[name]["compiled"]), name
    assert same(run.was[name]["compiled"], run.now[name]["compiled"]), name
