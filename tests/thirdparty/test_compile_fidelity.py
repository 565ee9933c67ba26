"""fx-lsp's compile mode agrees with real ``torch.compile`` runs on the CPU, on a
sample of the third-party workspace: in CI a class of each kind of case (``CI_SAMPLE``: 8 of
the sample files' 17 classes, a seventh of fx-lsp's seconds on them);
``FX_LSP_FULL_SWEEP=1`` runs every class of the sample's files (``tests/support/class_sample.py``),
and the full sweep over every file is ``benchmarks/fidelity/compile_fidelity.py``.

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
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from class_sample import FULL_SWEEP, leave_out
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
#: The classes CI runs, one of each kind of case the tests check, picked by name (the same in
#: every run) and, within a kind, the one fx-lsp takes the fewest seconds on (2026-11-26): a
#: torchvision family compiled whole (LRASPP: MobileNetV3 and a dict output; FCN and the
#: DeepLabV3s compile whole alike at two to four times its seconds); a transformers decoder
#: whose cache starts as ``torch.tensor([])`` on the weights' device (OPT; GPT-2, Llama and
#: BART build the same ``DynamicCache``); a transformers vision model on pixel values (ViT);
#: Wav2Vec2, which breaks the graph six times in train mode, in loops too (GB7000), with its
#: CPU parameter beside meta weights, and compiles whole in eval mode; ConvNext, a compile
#: error with the tiny config; and the three decorated forwards (``functools.wraps``, with
#: ``**kwargs``, transformers' ``can_return_tuple``). Left out: FCN, the DeepLabV3s, BERT,
#: RoBERTa, GPT-2, Llama, BART and the T5 encoder, more of the same kinds; together about
#: six sevenths of fx-lsp's seconds on these files.
CI_SAMPLE = {
    "tv_segmentation.py:TvLRASPP",
    "hf_wrapped.py:WrappedOPT",
    "hf_wrapped.py:WrappedViT",
    "hf_wrapped.py:WrappedWav2Vec2",
    "hf_wrapped.py:WrappedConvNext",
    "decorated.py:LoggedForward",
    "decorated.py:LoggedForwardKwargs",
    "decorated.py:ReturnsTuple",
}
#: One test per class, so that each class counts for itself
#: (benchmarks/fidelity/torch_series_table.py counts them per torch series).
SAMPLE_CLASSES = [key for key in wrapper_ids(SAMPLE) if FULL_SWEEP or key in CI_SAMPLE]


def sample_workspace(folder: Path) -> Path:
    """A copy of the workspace whose sample files hold only ``SAMPLE_CLASSES``, each at its
    own lines (the ground truth builds them from the workspace itself, at the same lines)."""
    copy = folder / "workspace"
    shutil.copytree(WORKSPACE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    left_out = {key.split(":")[1] for key in set(wrapper_ids(SAMPLE)) - set(SAMPLE_CLASSES)}
    for name in SAMPLE:
        path = copy / name
        names = {key.split(":")[1] for key in wrapper_ids((name,))} & left_out
        assert leave_out(path, names) == names, f"{name}: not every class of {names}"
    return copy


@pytest.fixture(scope="module")
def sample_rows(tmp_path_factory: pytest.TempPathFactory):
    missing = [name for name in ("torchvision", "timm", "transformers")
               if importlib.util.find_spec(name) is None]
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (run scripts/install-thirdparty.sh)")
    folder = tmp_path_factory.mktemp("compile-fidelity")
    lsp = subprocess.run([sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--mode",
                          "compile", "--output-format", "json", *SAMPLE],
                         cwd=sample_workspace(folder), env=OFFLINE, capture_output=True, text=True,
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
    agreement means something, and every class of it was run by both sides."""
    verdicts = {row.real_verdict for row in sample_rows}
    assert {"whole", "breaks", "error"} <= verdicts, verdicts
    assert {row.key for row in sample_rows} == set(SAMPLE_CLASSES)


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
