"""fx-lsp's compile mode agrees with real ``torch.compile`` runs on the CPU (issue 20), on a
sample of the third-party workspace that runs in a few minutes; the full sweep is
``benchmarks/fidelity/compile_fidelity.py``.

For each sampled class: fx-lsp's verdict (graph breaks, none, or a compile error), its first
break's (file, line, GB code) and its whole set of breaks equal those of
``torch.compile(fullgraph=False)`` on the CPU instance with real tensors of the inputs fx-lsp
decided, read from PyTorch's own ``graph_breaks`` log; a compile error is the same error at
the same line.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from compile_agreement import Agreement, agreements
from compile_ground_truth import WORKSPACE
from fx_compare import wrapper_ids

from fx_lsp.cli.output_formats.json_report import parse_report

HERE = Path(__file__).resolve().parent
OFFLINE = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
#: Generous: on the shared 2-core machine each run takes about a minute.
RUN_TIMEOUT = 900

pytestmark = pytest.mark.thirdparty

#: Files of the sample: a torchvision family compiled whole, transformers wrappers (GPT-2,
#: Llama, OPT, BART compiled whole, Wav2Vec2 breaking five times, ConvNext a compile error
#: with the tiny config) and a decorated forward.
SAMPLE = ("tpmodels/tv_segmentation.py", "tpmodels/hf_wrapped.py", "tpmodels/decorated.py")
#: One test per class of those files, so that each class counts for itself
#: (benchmarks/fidelity/torch_series_table.py counts them per torch series).
SAMPLE_CLASSES = wrapper_ids(SAMPLE)


@pytest.fixture(scope="module")
def sample_rows(tmp_path_factory: pytest.TempPathFactory):
    missing = [name for name in ("torchvision", "timm", "transformers")
               if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (run scripts/install-thirdparty.sh)")
    folder = tmp_path_factory.mktemp("compile-fidelity")
    lsp = subprocess.run([sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--mode",
                          "compile", "--output-format", "json", *SAMPLE],
                         cwd=WORKSPACE, env=OFFLINE, capture_output=True, text=True,
                         timeout=RUN_TIMEOUT, check=False)
    assert lsp.returncode in (0, 1), f"fx-lsp check exited {lsp.returncode}:\n{lsp.stderr[-3000:]}"
    report = folder / "fx-lsp.json"
    report.write_text(lsp.stdout)
    truth = folder / "ground-truth.json"
    real = subprocess.run([sys.executable, str(HERE / "compile_ground_truth.py"),
                           "--report", str(report), "--out", str(truth)],
                          env=OFFLINE, capture_output=True, text=True, timeout=RUN_TIMEOUT,
                          check=False)
    assert real.returncode == 0, f"compile_ground_truth.py failed:\n{real.stderr[-3000:]}"
    return agreements(json.loads(truth.read_text()), parse_report(lsp.stdout))


def test_sample_has_every_verdict(sample_rows) -> None:
    """The sample holds classes compiled whole, one that breaks and a compile error, so
    agreement means something."""
    verdicts = {row.real_verdict for row in sample_rows}
    assert {"whole", "breaks", "error"} <= verdicts, verdicts
    assert len(sample_rows) >= 8


@pytest.mark.parametrize("wrapper", SAMPLE_CLASSES)
def test_compile_verdict_and_first_break_agree(sample_rows: list[Agreement], wrapper: str) -> None:
    """Includes the transformers wrappers whose cache starts as ``torch.tensor([])`` on the
    weights' device (a plain meta tensor in dynamo's fake run, FX502 before fx-lsp made it
    fake) and Wav2Vec2, whose legacy ``torch.Tensor(n)`` parameter stays on the CPU beside
    meta weights (FX502 'device mismatch' while the inputs followed that parameter). Wav2Vec2's
    five breaks include one in a loop: GB7000, which torch logs after the message of the break
    that caused it."""
    rows = [row for row in sample_rows if row.key == wrapper]
    if not rows:
        pytest.skip(f"{wrapper}: fx-lsp found no example inputs, so neither side runs it")
    for row in rows:  # one per nn.Module mode fx-lsp compiled the class in
        assert row.agrees, (f"{row.key} ({row.module_mode}): real {row.real_verdict} "
                            f"{row.real[:1]} {row.real_error[:80]}, fx-lsp {row.lsp_verdict} "
                            f"{row.lsp[:1]} {row.lsp_error[:80]}")
        assert row.exact, (f"{row.key} ({row.module_mode}): real breaks {row.real}, fx-lsp's "
                           f"{row.lsp}")
