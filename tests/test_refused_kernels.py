"""Kernels the meta device refuses (issue 40, item 5): where an operator's meta kernel refuses
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
from test_library_input_sources import checked_against_real_torch

from fxcore.worker.capture.compile.capture import ON_FAKE_CPU_KERNEL
from fxcore.worker.capture.refused_kernels import real_kernels

pytestmark = [pytest.mark.matrix]

CORPUS = Path(__file__).resolve().parent / "corpus" / "meta_kernels"
#: torch 2.13's refusal of the grouped matmul on meta, which the CPU kernel runs.
GROUPED_MM_REFUSES = "Expected inputs of BF16 type"


def _grouped_mm_meta_refuses_float32() -> bool:
    grouped_mm = getattr(torch, "_grouped_mm", None)
    if grouped_mm is None:
        return False
    try:
        grouped_mm(torch.empty(4, 2, device="meta"), torch.empty(2, 2, 2, device="meta"),
                   offs=torch.empty(2, dtype=torch.int32, device="meta"))
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
