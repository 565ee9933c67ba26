"""fx-lsp's export mode agrees with real ``torch.export`` on real torchvision, timm and
transformers models (issue 20): for each wrapper class of ``tests/thirdparty/workspace``, the
export verdict fx-lsp computes on meta equals real non-strict ``torch.export`` on the CPU with
real weights and real tensors of the same input specs, and a real failure's first line (its
innermost frame in the workspace or a library) is in fx-lsp's first failure's call chain.

A representative sample runs here (every library and task family, exporting and failing
models); ``FX_LSP_EXPORT_SWEEP=1`` runs every class, the rest marked ``export_sweep``, as
``benchmarks/fidelity/export_fidelity.py`` does and prints as a table.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import missing_libraries
from export_compare import Row, compare, run_both
from fx_compare import wrapper_ids

HERE = Path(__file__).resolve().parent
PACKAGE_DIR = HERE / "workspace" / "tpmodels"

pytestmark = pytest.mark.thirdparty

#: Classes that export and classes that fail, from each library and task family; about two
#: minutes a side on the 2-core machine.
SAMPLE = {
    "decorated.py:LoggedForward",
    "hf_models.py:TinyBert",
    "hf_models.py:TinyGPT2",
    "hf_models.py:TinyT5",
    "hf_wrapped.py:WrappedConvNext",
    "timm_cnn.py:TimmResNet18",
    "timm_same_padding.py:TimmTfEfficientNetB0",
    "timm_vit.py:TimmLeViT",
    "timm_vit.py:TimmViTTiny",
    "tv_classification.py:TvInceptionV3",
    "tv_classification.py:TvMobileNetV3Small",
    "tv_segmentation.py:TvLRASPP",
    "tv_video.py:TvS3D",
}
SWEEP = os.environ.get("FX_LSP_EXPORT_SWEEP") == "1"


WRAPPERS = [key for key in wrapper_ids() if SWEEP or key in SAMPLE]


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Row]:
    """Both sides for the classes this session runs, compared, by ``file.py:Class``."""
    missing = missing_libraries()
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (run scripts/install-thirdparty.sh)")
    classes = [] if SWEEP else sorted(key.split(":")[1] for key in WRAPPERS)
    report, truth = run_both(tmp_path_factory.mktemp("export") / "report.json", classes)
    by_name = {module["qualified_name"]: module for module in report["modules"]}
    rows = [compare(by_name[f"{t['module']}:{t['class']}"], t) for t in truth["modules"]]
    return {row.key: row for row in rows}


def test_the_sample_is_in_the_workspace() -> None:
    assert set(wrapper_ids()) >= SAMPLE


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
