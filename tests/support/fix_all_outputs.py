"""One corpus file fixed by ``fx-lsp check --mode compile --fix --unsafe-fixes`` and measured
with real torch before and after, compiled with each backend of
``compiled_proof.proof_backends()`` (``aot_eager``, and ``inductor`` where it builds here),
through the fix-all corpus test's workspace and measuring helpers
(tests/fxcore/fixing/test_fix_all_corpus.py): the fix tests that prove a fix on compiled
outputs share it."""

from __future__ import annotations

import importlib.util
import shutil
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from compiled_proof import proof_backends, same

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
    #: Per class: breaks, graphs, error and options measured before and after the fixes
    #: (compiled with ``aot_eager``).
    before: dict[str, Any]
    after: dict[str, Any]
    #: Per backend, per class: the eager and compiled outputs before and after.
    was: dict[str, dict[str, Any]]
    now: dict[str, dict[str, Any]]
    #: Per backend but the first, per class: what it measured before and after (an error).
    measured_with: dict[str, tuple[dict[str, Any], dict[str, Any]]]


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
    backends = proof_backends()

    def measure_all(when: str) -> dict[str, dict[str, Any]]:
        return {backend: corpus.measured(path, tmp_path / f"{when}.{backend}.pt", backend)
                for backend in backends}

    before = measure_all("before")
    log = corpus.fix_all(workspace)
    after = measure_all("after")
    was, now = ({backend: torch.load(tmp_path / f"{when}.{backend}.pt", weights_only=False)
                 for backend in backends} for when in ("before", "after"))
    first = backends[0]
    return FixedRun(path, inputs, log, before[first], after[first], was, now,
                    {backend: (before[backend], after[backend]) for backend in backends[1:]})


def assert_breaks_gone_outputs_kept(run: FixedRun, name: str) -> None:
    """``name`` met a break before, none after, and its eager and compiled outputs are the
    same before and after (and compiled as eager), with every backend measured."""
    assert run.before[name]["breaks"], f"{name} meets no break unfixed"
    assert run.after[name]["breaks"] == [] and run.after[name]["error"] is None, run.after[name]
    for backend, (before, after) in run.measured_with.items():
        assert before[name]["error"] is None and after[name]["error"] is None, \
            (backend, before[name], after[name])
    for backend in run.was:
        was, now = run.was[backend][name], run.now[backend][name]
        assert same(was["eager"], now["eager"]), (name, backend, "eager output changed")
        assert same(was["eager"], was["compiled"]), (name, backend, "compiles wrong")
        assert same(was["compiled"], now["compiled"]), (name, backend, "compiled output changed")
