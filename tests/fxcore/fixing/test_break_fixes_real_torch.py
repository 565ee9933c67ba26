"""The fixes of graph breaks at values compiled code cannot keep (``value_plan``), proven by
real torch: each file of ``break_corpus`` is copied into a workspace of its own, fixed by
``fx-lsp check --mode compile --fix --unsafe-fixes``, then compiled by real torch on the CPU
before and after (``break_corpus_compile.py``, a process per run): every class that broke has
no break left, the fixed file imports, and its outputs, eager and compiled, are those of the
class before the fix."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "break_corpus"
REPOSITORY = HERE.parents[2]
#: The corpus files whose breaks ``value_plan``'s fixes remove.
FILES = ("scalar_reads.py", "dynamic_shapes.py", "data_dependent_control.py")


def _environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(REPOSITORY), os.environ.get("PYTHONPATH", "")])}


def _compiled(path: Path, outputs: Path) -> tuple[dict[str, list], dict]:
    """Real torch.compile over a corpus file: breaks by class, outputs by class."""
    done = subprocess.run([sys.executable, str(HERE / "break_corpus_compile.py"), str(path),
                           str(outputs)], capture_output=True, text=True, check=True,
                          env=_environment(), timeout=600)
    return json.loads(done.stdout.strip().splitlines()[-1]), torch.load(outputs)


def _workspace(tmp_path: Path, name: str) -> Path:
    """The corpus file alone in a workspace whose pyproject gives fx-lsp its INPUTS."""
    shutil.copy(CORPUS / name, tmp_path / name)
    done = subprocess.run([sys.executable, "-c", "import json, runpy, sys; print(json.dumps("
                           "runpy.run_path(sys.argv[1])['INPUTS']))", str(tmp_path / name)],
                          capture_output=True, text=True, check=True, timeout=300)
    lines = ["[tool.fx-lsp]", ""]
    for cls, specs in json.loads(done.stdout).items():
        inputs = ", ".join(f'{argument} = "{spec}"' for argument, spec in specs.items())
        lines += [f'[tool.fx-lsp.modules."{Path(name).stem}:{cls}"]', f"inputs = {{{inputs}}}"]
    (tmp_path / "pyproject.toml").write_text("\n".join(lines) + "\n")
    return tmp_path / name


def _same(before: object, after: object) -> bool:
    """Equal values up to a float sum's rounding (a masked sum adds in another order)."""
    return torch.allclose(before, after, rtol=1e-5, atol=1e-6, equal_nan=True)  # type: ignore


@pytest.mark.slow
@pytest.mark.parametrize("name", FILES)
def test_fix_all_removes_the_breaks_and_keeps_outputs(tmp_path: Path, name: str) -> None:
    path = _workspace(tmp_path, name)
    breaks_before, outputs_before = _compiled(path, tmp_path / "before.pt")
    assert all(breaks_before.values()), breaks_before  # every class breaks unfixed
    subprocess.run([sys.executable, "-m", "fx_lsp", "check", "--mode", "compile", "--fix",
                    "--unsafe-fixes", str(tmp_path)], capture_output=True, text=True,
                   env=_environment(), cwd=tmp_path, timeout=900)
    assert path.read_text() != (CORPUS / name).read_text()
    breaks_after, outputs_after = _compiled(path, tmp_path / "after.pt")
    assert breaks_after == {cls: [] for cls in breaks_before}
    for cls, (eager, compiled) in outputs_before.items():
        fixed_eager, fixed_compiled = outputs_after[cls]
        assert _same(eager, compiled), cls
        assert _same(eager, fixed_eager), cls
        assert _same(eager, fixed_compiled), cls
