"""Fix-all proven by real torch on the break corpus (``break_corpus/``, a file per kind of
graph break, several spellings each): the corpus files in one workspace, real
``torch.compile`` on the CPU over each file before, ``fx-lsp check --mode compile --fix
--unsafe-fixes`` once over the workspace, then real torch.compile over each file after
(``corpus_measure``, seeded weights and inputs alike, a process per file and run: a fixed file
may set ``torch._dynamo.config`` options as it is imported). Over the folder, at least 80% of
the breaks are gone; in the files listed in ``ALL_REMOVED``, every class meets none; no class
meets a break it did not meet before; every output, eager and compiled, is the same; every
fixed file imports."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import compiled_proof
import pytest

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "break_corpus"
ROOT = HERE.parents[2]
MEASURE = HERE / "corpus_measure.py"
#: The corpus files whose every break fix-all removes (``value_plan``'s fixes, the
#: ``torch.cond`` rewrite of a layer drop, the ``requires_grad`` mark kept out of compiled code).
ALL_REMOVED = frozenset({"scalar_reads.py", "dynamic_shapes.py", "data_dependent_control.py",
                         "model_habits.py"})


def corpus_files() -> list[Path]:
    return sorted(path for path in CORPUS.glob("*.py") if not path.name.startswith("_"))


def missing_imports(path: Path) -> list[str]:
    """The top-level packages ``path`` imports that this Python lacks."""
    names = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return sorted(name for name in names if importlib.util.find_spec(name) is None)


def class_inputs(path: Path) -> dict[str, dict[str, str]]:
    """The file's ``INPUTS`` literal, read without importing it."""
    for node in ast.parse(path.read_text()).body:
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, ast.AnnAssign) and node.value else []
        if any(isinstance(target, ast.Name) and target.id == "INPUTS" for target in targets):
            namespace: dict = {}
            exec(compile(ast.Module([node], []), str(path), "exec"), namespace)
            return namespace["INPUTS"]
    raise AssertionError(f"{path.name} has no INPUTS")


def write_pyproject(workspace: Path, inputs: dict[str, dict[str, dict[str, str]]]) -> None:
    """The pyproject giving fx-lsp each class's ``INPUTS``, by module then class."""
    lines = ["[tool.fx-lsp]", ""]
    for module, classes in inputs.items():
        for name, specs in classes.items():
            shown = ", ".join(f'{argument} = "{spec}"' for argument, spec in specs.items())
            lines += [f'[tool.fx-lsp.modules."{module}:{name}"]', f"inputs = {{{shown}}}", ""]
    (workspace / "pyproject.toml").write_text("\n".join(lines))


def _environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), os.environ.get("PYTHONPATH", "")])}


def measured(path: Path, out: Path, backend: str | None = None) -> dict:
    done = subprocess.run([sys.executable, str(MEASURE), str(path), str(out),
                           *([backend] if backend else [])],
                          capture_output=True, text=True, env=_environment(), timeout=600,
                          check=False)
    assert done.returncode == 0, f"{path.name} does not run:\n{done.stderr[-3000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def fix_all(workspace: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "fx_lsp", "check", "--mode", "compile",
                           "--fix", "--unsafe-fixes", "."], cwd=workspace,
                          capture_output=True, text=True, env=_environment(), timeout=900,
                          check=False)
    return done.stdout + done.stderr


def same(a: object, b: object) -> bool:
    """Equal up to float rounding, as the value fixes' own tests compare: a masked reduction
    (``torch.where(m, x, 0).sum()`` for ``x[m].sum()``) adds in another order."""
    return compiled_proof.same(a, b, atol=1e-6)


@pytest.mark.slow
@pytest.mark.matrix
@pytest.mark.matrix_sweep
@pytest.mark.timeout(1500)  # eight files, each compiled twice by real torch, on a busy machine
def test_fix_all_removes_most_breaks_of_the_corpus_outputs_kept(tmp_path: Path) -> None:
    import torch

    workspace = tmp_path / "workspace"
    workspace.mkdir()
    rows, files = [], []
    for path in corpus_files():
        if missing := missing_imports(path):
            rows.append(f"{path.name}: not run, this Python lacks {', '.join(missing)}")
        else:
            shutil.copy(path, workspace / path.name)
            files.append(workspace / path.name)
    inputs = {path.stem: class_inputs(path) for path in files}
    write_pyproject(workspace, inputs)
    before = {path.stem: measured(path, tmp_path / f"{path.stem}.before.pt") for path in files}
    log = fix_all(workspace)
    assert "Fixed" in log, log
    totals = Counter()
    for path in files:
        after = measured(path, tmp_path / f"{path.stem}.after.pt")
        outputs = [torch.load(tmp_path / f"{path.stem}.{when}.pt", weights_only=False)
                   for when in ("before", "after")]
        for name in inputs[path.stem]:
            old, new = before[path.stem][name], after[name]
            old_codes = Counter(code for _, code in old["breaks"])
            new_codes = Counter(code for _, code in new["breaks"])
            if not old["breaks"]:
                # This torch compiles the class whole unfixed (2.15 keeps a requires_grad
                # mark in its graph): nothing to remove, and no fix may add a break.
                rows.append(f"{path.name}:{name}: no break on torch {torch.__version__}")
            assert new["error"] is None, f"{path.name}:{name} fails to compile: {new['error']}"
            assert not new_codes - old_codes, f"{path.name}:{name} new breaks {new['breaks']}"
            if path.name in ALL_REMOVED:
                assert new["breaks"] == [], f"{path.name}:{name} keeps {new['breaks']}"
            was, now = outputs[0][name], outputs[1][name]
            assert same(was["eager"], now["eager"]), f"{path.name}:{name} eager output changed"
            assert same(was["eager"], was["compiled"]), f"{path.name}:{name} compiles wrong"
            assert same(was["compiled"], now["compiled"]), \
                f"{path.name}:{name} compiled output changed"
            totals["before"] += len(old["breaks"])
            totals["after"] += len(new["breaks"])
            rows.append(f"{path.name}:{name}: {len(old['breaks'])} -> {len(new['breaks'])}")
    removed = totals["before"] - totals["after"]
    print("\n".join(rows))
    print(f"corpus: {totals['before']} breaks before, {totals['after']} after, {removed} "
          f"removed ({removed / max(totals['before'], 1):.0%})")
    assert totals["before"] > 0
    assert removed >= 0.8 * totals["before"]
