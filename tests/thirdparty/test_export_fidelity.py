"""fx-lsp's export mode agrees with real ``torch.export`` on real torchvision, timm and
transformers models: for each wrapper class of ``tests/thirdparty/workspace``, the
export verdict fx-lsp computes on meta equals real non-strict ``torch.export`` on the CPU with
real weights and real tensors of the same input specs, and a real failure's first line (its
innermost frame in the workspace or a library) is in fx-lsp's first failure's call chain.

CI runs a sample, a class of each kind of case (``SAMPLE``); ``FX_LSP_FULL_SWEEP=1``
(``tests/support/class_sample.py``) runs every class, the rest marked ``export_sweep``, as
``benchmarks/fidelity/export_fidelity.py`` does and prints as a table.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from class_sample import FULL_SWEEP
from conftest import missing_libraries
from export_compare import Row, compare, run_both
from fx_compare import library, wrapper_ids

HERE = Path(__file__).resolve().parent
PACKAGE_DIR = HERE / "workspace" / "tpmodels"

pytestmark = pytest.mark.thirdparty

#: One class of each kind of case the comparison has, from each library, picked by name (the
#: same in every run), in four of the workspace's files (fx-lsp's side imports each file's
#: libraries in a child of its own): exports, a torchvision wrapper with a dict output
#: (LRASPP), timm's same padding, sized from the input (TfEfficientNetB0), transformers (BERT)
#: and a decorated forward; fails inside torch with no model line, located at the class
#: (GPT-2: a transformers cache in the output); fails at a model line (ConvNext: the tiny
#: config's eager error, FX406). Left out (2026-11-26): the T5 model, the ConvNext wrapper,
#: timm's ResNet-18, ViT-Tiny and LeViT, torchvision's MobileNetV3, Inception v3 and S3D,
#: more of the same kinds from five more files.
SAMPLE = {
    "decorated.py:LoggedForward",
    "hf_models.py:TinyBert",
    "hf_models.py:TinyConvNext",
    "hf_models.py:TinyGPT2",
    "timm_same_padding.py:TimmTfEfficientNetB0",
    "tv_segmentation.py:TvLRASPP",
}
WRAPPERS = [key for key in wrapper_ids() if FULL_SWEEP or key in SAMPLE]


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Row]:
    """Both sides for the classes this session runs, compared, by ``file.py:Class``."""
    missing = missing_libraries()
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (run scripts/install-thirdparty.sh)")
    classes = [] if FULL_SWEEP else sorted(key.split(":")[1] for key in WRAPPERS)
    report, truth = run_both(tmp_path_factory.mktemp("export") / "report.json", classes)
    by_name = {module["qualified_name"]: module for module in report["modules"]}
    rows = [compare(by_name[f"{t['module']}:{t['class']}"], t) for t in truth["modules"]]
    return {row.key: row for row in rows}


def test_the_sample_is_in_the_workspace() -> None:
    assert set(wrapper_ids()) >= SAMPLE


def test_the_sample_holds_every_kind(compared: dict[str, Row]) -> None:
    """The sample is worth its agreement: real export succeeds, fails at a model line and
    fails inside torch, each for a class of it, and each library is in it."""
    rows = [compared[key] for key in SAMPLE if key in compared]
    kinds = {"ok" if row.real == "ok" else "in torch" if row.real.endswith("no model line)")
             else "model line" for row in rows}
    assert kinds == {"ok", "in torch", "model line"}, [(row.key, row.real) for row in rows]
    assert {library(key) for key in SAMPLE} == {"torchvision", "timm", "transformers"}


@pytest.mark.parametrize("wrapper", [
    pytest.param(key, marks=[] if key in SAMPLE else [pytest.mark.export_sweep])
    for key in WRAPPERS])
def test_export_verdict_and_first_line_agree(compared: dict[str, Row], wrapper: str) -> None:
    row = compared.get(wrapper)
    assert row is not None, f"{wrapper}: not in fx-lsp's export report"
    if wrapper in SAMPLE:
        assert row.agree is not None, f"{wrapper}: not tried ({row.fx_lsp})"
    assert row.agree is not False, (
        f"{wrapper}: {row.why}; real torch.export: {row.real}; fx-lsp: {row.fx_lsp}")
