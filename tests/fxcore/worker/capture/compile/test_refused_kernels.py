"""Kernels the meta device refuses: where an operator's meta kernel refuses
what the CPU kernel accepts (a grouped matmul in float32, an operator without a meta kernel),
fx-lsp's eager runs take the CPU kernel's answer (``refused_kernels``), and the compile capture
runs an operator without a meta kernel on fake CPU tensors, so that each class gets export and
compile verdicts, each compared with real torch.export and torch.compile on the CPU in the same
run (``checked_against_real_torch``). Real export and dynamo run the meta kernel too: the
grouped matmul in float32 fails there, as it does under fx-lsp."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch
from class_sample import FULL_SWEEP, leave_out
from library_verdicts import checked_against_real_torch

from fxcore.worker.capture.compile.fake_cpu import ON_FAKE_CPU_KERNEL
from fxcore.worker.capture.compile.torch_hooks import eager_code_modes
from fxcore.worker.meta.refused_kernels import real_kernels

pytestmark = [pytest.mark.matrix]

CORPUS = Path(__file__).resolve().parents[4] / "corpus" / "meta_kernels"
#: torch 2.13's refusal of the grouped matmul on meta, which the CPU kernel runs.
GROUPED_MM_REFUSES = "Expected inputs of BF16 type"


def _grouped_mm_meta_refuses_float32() -> bool:
    grouped_mm = getattr(torch, "_grouped_mm", None)
    if grouped_mm is None:
        return False
    try:
        # The shapes the tests use: a shape the kernel refuses for itself says nothing.
        grouped_mm(torch.empty(16, 8, device="meta"), torch.empty(4, 8, 8, device="meta"),
                   offs=torch.empty(4, dtype=torch.int32, device="meta"))
    except RuntimeError:
        return True
    return False


needs_refusal = pytest.mark.skipif(not _grouped_mm_meta_refuses_float32(),
                                   reason="this torch's grouped matmul runs float32 on meta")


@needs_refusal
def test_the_cpu_kernel_answers_where_the_meta_kernel_refuses() -> None:
    mat_a, experts = torch.empty(16, 8, device="meta"), torch.empty(4, 8, 8, device="meta")
    offs = torch.empty(4, dtype=torch.int32, device="meta")
    with real_kernels() as ran:
        out = torch._grouped_mm(mat_a, experts, offs=offs)
        # The code's own error stays: the CPU kernel refuses these too.
        with pytest.raises(RuntimeError):
            torch._grouped_mm(torch.empty(16, 7, device="meta"), experts, offs=offs)
        reflectors, tau = torch.geqrf(torch.empty(4, 3, device="meta"))
    assert (out.device.type, tuple(out.shape)) == ("meta", (16, 8))
    assert (tuple(reflectors.shape), tuple(tau.shape), tau.device.type) == ((4, 3), (3,), "meta")
    assert ran == ["aten::_grouped_mm", "aten::geqrf"]


@pytest.mark.slow
@needs_refusal
@pytest.mark.skipif(not eager_code_modes(), reason="this torch's dynamo traces into a dispatch "
                    "mode's handler, so compile's eager code runs without the CPU kernels")
def test_classes_whose_meta_kernels_refuse_get_real_torchs_verdicts(tmp_path: Path) -> None:
    shutil.copy(CORPUS / "experts.py", tmp_path)
    classes = checked_against_real_torch(tmp_path, ["experts.py"])
    assert len(classes) == 4
    # The input search ran each on its first layer's size, which fits.
    assert all(modes["export"]["inputs"]["tensors"] == {"x": "float32[2, 8, 16]"}
               and not modes["export"]["inputs"]["note"] for modes in classes.values())
    compiled = classes["Householder"]["compile"]
    assert compiled["status"] == "traceable"
    assert ON_FAKE_CPU_KERNEL.format(op="`aten::geqrf`") in compiled["capture_notes"]


#: The third-party workspace's package: its shim comes first (torchvision beside a CPU torch,
#: nothing downloaded).
TPMODELS = Path(__file__).resolve().parents[4] / "thirdparty" / "workspace" / "tpmodels"
MOE_CONFIG = """\
[tool.fx-lsp]
timeout = 300

[tool.fx-lsp.modules."tpmodels.moe_models:TinyMixtral"]
inputs = {input_ids = "int64[2, 8]"}

[tool.fx-lsp.modules."tpmodels.moe_models:TinyQwenMoe"]
inputs = {input_ids = "int64[2, 8]"}
"""


#: The mixture-of-experts classes: (grouped-matmul experts held by a module, eager experts
#: subclassed) of Mixtral and of Qwen2-MoE.
MOE_GROUPED, MOE_EAGER = {"MixtralBlock", "QwenMoeBlock"}, {"TinyMixtral", "TinyQwenMoe"}
#: CI's sample: one of each experts implementation, one of each model family (the same code
#: paths of fx-lsp, at half the seconds); ``FX_LSP_FULL_SWEEP=1`` runs all four.
MOE_CI_SAMPLE = {"MixtralBlock", "TinyQwenMoe"}


@pytest.mark.thirdparty
@pytest.mark.slow
@pytest.mark.timeout(1500)  # two fx-lsp and real torch runs of four models
def test_mixture_of_experts_models_get_real_torchs_verdicts_in_eval_mode(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Mixtral and Qwen2-MoE, held by a module (grouped-matmul experts) and subclassed (eager
    experts), each judged in eval mode as real torch runs them, and compared with it. CI runs
    one class of each experts implementation (``MOE_CI_SAMPLE``); ``FX_LSP_FULL_SWEEP=1``
    (``tests/support/class_sample.py``) runs all four."""
    pytest.importorskip("transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    package = tmp_path / "tpmodels"
    package.mkdir()
    for name in ("__init__.py", "_shim.py"):
        shutil.copy(TPMODELS / name, package)
    shutil.copy(CORPUS / "moe_models.py", package)
    sample = MOE_GROUPED | MOE_EAGER if FULL_SWEEP else MOE_CI_SAMPLE
    left_out = (MOE_GROUPED | MOE_EAGER) - sample
    assert leave_out(package / "moe_models.py", left_out) == left_out
    (tmp_path / "pyproject.toml").write_text(MOE_CONFIG, encoding="utf-8")
    classes = checked_against_real_torch(tmp_path, ["tpmodels/moe_models.py"])
    assert set(classes) == sample
    assert all("eval" in module["module_modes"]
               for modes in classes.values() for module in modes.values())
    # The eager experts' routing breaks the graph, and the code dynamo runs eagerly after
    # the break indexes by a tensor's value: compiled on, with real torch's breaks.
    for name in sample & MOE_EAGER:
        assert classes[name]["compile"]["status"] == "failed"
        assert "GB0036" in {f["code"] for f in classes[name]["compile"]["failures"]}
