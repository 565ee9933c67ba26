"""Without a GPU, what a GPU would answer: classes judged for a GPU (``device = "cuda"``) get the
export and compile verdicts real torch gives on one. benchmarks/gpu/answers/ holds real torch's
answers on a GPU (``python3 -m benchmarks run gpu gpu_answers -- --record FILE``, run where a
GPU was lent: each class rebuilt from fx-lsp's arguments, moved to the GPU, run on real tensors
of fx-lsp's inputs, eagerly, under non-strict ``torch.export`` and under ``torch.compile``).
Here fx-lsp judges the same classes for a GPU, on this machine's build of torch (the torch
matrix's CUDA builds without a GPU; a CPU-only build where one of the record's release is
installed), and each verdict is compared with the record as the benchmark compares them
(``gpu_answers.judged``).

Only against a record of the installed torch's release: another release's own differences
(renumbered break codes, breaks it adds or drops) are not the GPU view's. The classes: the
GPU-written corpus, the compile corpus's classes without a meta kernel (``needs_real_data.py``:
on a GPU a break at ``bincount``, which the view gave as an FX502 of dynamo's guard on a size
the data decides), and the export corpus's ``export_traceable.py`` (``torch.arange(n)`` beside
CUDA weights: a failure on a GPU, which the view read as a limit of the meta device)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import torch

from benchmarks.gpu.gpu_answers import ANSWERS, ROOT_MARK, by_file, judged, rerooted
from fx_lsp.cli.output_formats.json_report import parse_report

import cli_support

pytestmark = [pytest.mark.matrix, pytest.mark.slow]

CORPORA = Path(__file__).resolve().parents[3] / "corpus"
FILES = [*sorted((CORPORA / "gpu").glob("*.py")), CORPORA / "compile" / "needs_real_data.py",
         CORPORA / "export" / "export_traceable.py"]
#: Where fx-lsp's verdict differs from a GPU's for a reason of its own, not the GPU view's:
#: each the start of the benchmark's line for it, and why.
KNOWN = {
    # The class splits by ``torch.tensor([3, 5]).tolist()``. The record ran fx-lsp's earlier
    # choice, float32[2], on which the split fails (a break, then the failure); fx-lsp now
    # reads the code's own numbers (``literal_values``) and chooses float32[2, 8], where it
    # agrees with real torch on the CPU (``test_literal_values``). A GPU's record of that
    # input is still to be made.
    "compile data_dependent.py:ToListSplit": "the record's inputs are fx-lsp's earlier ones",
    "data_dependent.py:ToListSplit: real torch ran on": "the same",
    # The record ran fx-lsp's earlier choice, float32[2, 8, 16], which does not fit the 6x6
    # mask (real torch fails at the mask's line). fx-lsp's search by the operations' own sizes
    # (``symbolic_sizes``) now chooses float32[6, 16], which fits: its verdicts agree with
    # real torch on the CPU (``test_gpu_data_dependent``). A GPU's record of it is to be made.
    "export_traceable.py:SelfAttention: real torch ran on": "the record's inputs are earlier",
    "export export_traceable.py:SelfAttention": "the same",
    "compile export_traceable.py:SelfAttention": "the same",
}


def _records() -> dict[str, Path]:
    """The records by the torch release (``2.11``) they were made with."""
    found = {}
    for path in sorted(ANSWERS.glob("*.json")):
        release = ".".join(json.loads(path.read_text())["torch"].split(".")[:2])
        found[release] = path
    return found


RELEASE = ".".join(torch.__version__.split(".")[:2])


@pytest.mark.skipif(RELEASE not in _records(),
                    reason=f"no GPU record of torch {RELEASE} in benchmarks/gpu/answers")
def test_judged_for_a_gpu_as_a_gpu_answers(tmp_path: Path) -> None:
    record = json.loads(_records()[RELEASE].read_text())
    root = tmp_path.resolve()
    for path in FILES:
        shutil.copy(path, root)
    (root / "pyproject.toml").write_text('[tool.fx-lsp]\ndevice = "cuda"\n')
    completed = cli_support.fx_lsp("check", "--no-cache", "--mode", "export,compile",
                                   "--output-format", "json", ".", cwd=root)
    assert completed.returncode in (0, 1), completed.stderr
    classes = by_file(parse_report(completed.stdout), root)
    assert sum(len(members) for members in classes.values()) >= 30
    answers = rerooted(record["answers"], ROOT_MARK, str(root))
    figures = judged(classes, answers)
    assert figures.tried["export"] == figures.tried["compile"]
    lines = [line.replace(f"{root}/", "") for line in figures.disagreements]
    # A recorded class fx-lsp gives no inputs to is compared with nothing: said so.
    compared = {name for members in classes.values() for name in members}
    lines += [f"no verdict {name}" for name in answers
              if name.split(":")[0] in {path.name for path in FILES} and name not in compared]
    assert sorted(line for line in lines if not line.startswith(tuple(KNOWN))) == []
    # A known difference gone is news: the list above says what it was.
    assert {known for known in KNOWN if any(line.startswith(known) for line in lines)} \
        == set(KNOWN)
