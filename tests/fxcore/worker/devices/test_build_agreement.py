"""Judged for a GPU (``device = "cuda"``), fx-lsp gives the same verdicts on a
CPU-only build of torch and on PyPI's CUDA build of the same release, neither with a GPU: every
class of the GPU-written, compile and export corpora, in export and compile, by its status and
its problems' (line, code) (``benchmarks/gpu/build_agreement.py``'s comparison).

It needs both builds of one release: ``FX_LSP_OTHER_BUILD`` names the Python of the build this
one is not. ``scripts/test-torch-matrix.sh`` makes a venv of PyPI's CUDA build of python3's
release and runs this test with it (CI's matrix tier); elsewhere it is skipped, saying so."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from benchmarks.gpu.build_agreement import verdicts

OTHER = os.environ.get("FX_LSP_OTHER_BUILD")
CORPORA = ["gpu", "compile", "export"]

pytestmark = [pytest.mark.builds, pytest.mark.skipif(
    not OTHER, reason="FX_LSP_OTHER_BUILD names no Python with the other build of this torch "
                      "release (scripts/test-torch-matrix.sh sets it)")]


def _build(python: str) -> tuple[str, bool]:
    """``python``'s torch release, and whether its build has CUDA."""
    code = "import torch; print(torch.__version__.split('+')[0], torch.version.cuda is not None)"
    release, cuda = subprocess.run([python, "-c", code], capture_output=True, text=True,
                                   check=True).stdout.split()
    return release, cuda == "True"


def test_the_gpu_view_gives_the_same_verdicts_on_both_builds() -> None:
    assert OTHER is not None
    here, other = _build(sys.executable), _build(OTHER)
    # One release, one build of each kind: otherwise a release's own changes would show.
    assert here[0] == other[0] == torch.__version__.split("+")[0], (here, other)
    assert {here[1], other[1]} == {True, False}, (here, other)
    with ThreadPoolExecutor(max_workers=2) as pool:
        mine, theirs = pool.map(lambda python: verdicts(python, CORPORA), [sys.executable, OTHER])
    # The same classes and modes on each build (each corpus file imported on both).
    assert mine.keys() == theirs.keys() and len(mine) >= 250, (len(mine), len(theirs))
    assert {key: (mine[key], theirs[key]) for key in mine if mine[key] != theirs[key]} == {}
