"""Fixtures of the third-party fidelity tests: one plain-torch.fx ground truth and one
``fx-lsp check --format json`` run over a sample of ``tests/thirdparty/workspace``'s files, each
in a subprocess (``fx_compare.py``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from fx_compare import run_both
from once_per_run import once_per_run

LIBRARIES = ("torchvision", "timm", "transformers")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "thirdparty: fidelity tests on real torchvision/timm/transformers models "
        "(need scripts/install-thirdparty.sh; deselect with -m 'not thirdparty')",
    )
    config.addinivalue_line(
        "markers",
        "export_sweep: an export fidelity class outside the sample, run with "
        "FX_LSP_FULL_SWEEP=1 (benchmarks/fidelity/export_fidelity.py prints the whole sweep)",
    )


def missing_libraries() -> list[str]:
    return [name for name in LIBRARIES if importlib.util.find_spec(name) is None]


#: The files of the sample the fidelity and shape tests check (every class of each: fx-lsp
#: checks whole files): 38 of the workspace's 129 classes, about a third of its time with the
#: shape test's real runs; the whole workspace is ``benchmarks/fidelity/fx_fidelity.py``'s
#: sweep. It holds every library, traceable classes (torchvision's, decorated forwards) and
#: every failure kind of the sweep: mutation and conversion (transformers wrappers), control
#: flow (timm's same padding, RAFT), iteration over a loop's iterable spanning lines
#: (detection), unpacking and errors (decorated forwards, wrappers). Left out: files of many
#: classes of the same kinds (timm_cnn, timm_vit, hf_models) and tv_classification.py, whose
#: backbones (ResNet-50, MobileNetV3) the segmentation models trace; with it the sample took
#: half the sweep's time (2026-11-26).
SAMPLE_FILES = ("tpmodels/decorated.py", "tpmodels/hf_wrapped.py", "tpmodels/timm_same_padding.py",
                "tpmodels/tv_detection.py", "tpmodels/tv_detection_as_built.py",
                "tpmodels/tv_optical_flow.py", "tpmodels/tv_segmentation.py",
                "tpmodels/tv_video.py")


@pytest.fixture(scope="session")
def thirdparty_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, dict]:
    """(ground truth, fx-lsp JSON) of the sample, both computed in this test run, once:
    test_fidelity.py and test_shapes_real_models.py run in different xdist processes
    (``--dist loadfile``), which each ran both (minutes of the slow tier) before they shared
    one result."""
    missing = missing_libraries()
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (run scripts/install-thirdparty.sh)")
    truth, report = once_per_run("thirdparty-runs", lambda: _both_runs(
        tmp_path_factory.mktemp("thirdparty")))
    return truth, report


def _both_runs(folder: Path) -> tuple[dict, dict]:
    try:
        runs = run_both(folder, SAMPLE_FILES)
    except RuntimeError as error:
        pytest.fail(str(error))
    return runs.truth, runs.report
