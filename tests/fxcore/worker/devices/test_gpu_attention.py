"""GPU-only attention kernels and their selection in the GPU view.
``F.scaled_dot_product_attention`` on fake CUDA tensors picks the kernel an H100 (sm90) picks
for its inputs among the backends ``sdpa_kernel`` and ``torch.backends.cuda.enable_*_sdp``
leave enabled, and raises a GPU's "No available kernel" where none fits, the same on a
CPU-only build and on a CUDA build without a GPU (``fxcore/worker/devices/attention_choice``).
Before, a CPU-only build ran the math kernel whatever was enabled (``sdpa_kernel(FLASH)`` on
float32 was traceable) and a CUDA build's chooser, finding no device, rejected every fused
kernel (``sdpa_kernel(FLASH)`` on float16 found no kernel; math turned off found none).

Expected answers. No GPU run of these cases exists yet; real torch on the CPU is not the
reference, because torch's source chooses a CUDA tensor's kernel apart from a CPU tensor's
(aten/src/ATen/native/transformers/attention.cpp, ``scaled_dot_product_attention``: the
device's ``_fused_sdp_choice_stub``). What an H100 gives follows from the CUDA chooser,
aten/src/ATen/native/transformers/cuda/sdp_utils.cpp (the same in torch 2.10 to 2.15 for these
cases), ``select_sdp_backend``: the enabled backends in ``priority_order`` (flash, efficient,
math, cuDNN by default), the first whose ``can_use_*_attention`` checks pass; none is
``TORCH_CHECK(!print_debug, "No available kernel. Aborting execution.")``. The checks that
decide the cases below:

- ``check_dtypes_flash_attention``/``check_dtypes_low_precision`` (sm80 and newer): flash and
  cuDNN take float16 and bfloat16 only, so float32 and float64 are never flash;
- ``can_use_mem_efficient_attention``: float16, float32 and bfloat16 on sm80 and newer, and
  ``check_head_dim_size_mem_efficient``: the head dim a multiple of ``minimum_gemm_alignment``
  (128 bits of the dtype on sm80+, at least 4: 4 for float32, 8 for 16-bit floats);
- ``check_for_attn_mask``: flash takes no mask; ``check_flash_causal_non_square_seqlens``:
  no ``is_causal`` where the query's and key's lengths differ; ``check_head_dim_size_flash``:
  equal head dims of at most 256;
- ``check_cudnn_tensor_shapes``: head dims multiples of 8, a key length other than 1.

Export's graph holds ``aten.scaled_dot_product_attention`` on a GPU as here: torch.export's
(non-strict, pre-dispatch) IR keeps the op, and the kernel is chosen inside it; dynamo's graph
holds ``torch._C._nn.scaled_dot_product_attention``, and its ``sdpa_kernel`` context is
``SDPAKernelVariable`` (torch/_dynamo/variables/ctx_manager.py), which does not look at the
device: a class compiles whole with it on a GPU as on the CPU. (The issue reports GB0006 at
the ``with`` on an H100 with torch 2.11; dynamo's source on 2.10 to 2.15 gives no break there,
and an H200 with torch 2.11 compiled ``EfficientOrMath`` whole, with no break in dynamo's log.)
A class where no kernel fits gets "does not fit" (FX406, FX504): on a GPU it raises the same
error when run eagerly on any input.

Checked on a GPU (an H200, sm90 as an H100, torch 2.11: benchmarks/gpu/answers/): the corpus's
classes as argued above, but for one error's words. Where the chooser goes past flash,
efficient, math and cuDNN with the overrideable backend still enabled (torch's default
priority order ends with it; ``sdpa_kernel`` turns it off unless listed), the CUDA chooser's
switch has no case for it and its ``default: TORCH_CHECK(false, "Invalid backend")`` raises:
``FusedOnlyInDouble`` (math turned off with ``enable_math_sdp(False)``, float64) is "Invalid
backend" there, as pytorch#166962 reports for backends turned off that way.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from fx_lsp.cli.output_formats.json_report import parse_report
from fxcore.worker.pipeline.capturing import GPU_NOTE

import cli_support

pytestmark = pytest.mark.matrix

CORPUS = Path(__file__).resolve().parents[3] / "corpus" / "gpu"
NO_KERNEL = "No available kernel. Aborting execution."
INVALID_BACKEND = "Invalid backend"

#: Each case: (dtype, query/key/value shapes, a bool mask's shape or None, dropout,
#: is_causal, enable_gqa, the sdpa_kernel backends or None for torch's flags, math off, and
#: optionally the key's and value's dtype), and the kernel an H100 runs it with (or the
#: start of its error), by the checks of the docstring.
CASES: dict[str, tuple[tuple[Any, ...], str]] = {
    "float32, [EFFICIENT, MATH]": (
        ("float32", [(2, 2, 1, 4)] * 3, None, 0.0, False, False, ["EFFICIENT_ATTENTION", "MATH"],
         False), "efficient"),
    "float32, FLASH": (
        ("float32", [(2, 2, 1, 4)] * 3, None, 0.0, False, False, ["FLASH_ATTENTION"], False),
        NO_KERNEL),
    "float16, FLASH": (
        ("float16", [(2, 2, 1, 4)] * 3, None, 0.0, False, False, ["FLASH_ATTENTION"], False),
        "flash"),
    "float16 head dim 4, [EFFICIENT, MATH]: unaligned for 16-bit": (
        ("float16", [(2, 2, 1, 4)] * 3, None, 0.0, False, False, ["EFFICIENT_ATTENTION", "MATH"],
         False), "math"),
    "float16 with a bool mask, [FLASH, EFFICIENT]": (
        ("float16", [(2, 2, 4, 8)] * 3, (4, 4), 0.0, False, False,
         ["FLASH_ATTENTION", "EFFICIENT_ATTENTION"], False), "efficient"),
    "float16 causal, 2 queries on 3 keys, FLASH": (
        ("float16", [(2, 2, 2, 8), (2, 2, 3, 8), (2, 2, 3, 8)], None, 0.0, True, False,
         ["FLASH_ATTENTION"], False), NO_KERNEL),
    "float16 causal, 2 queries on 3 keys, [FLASH, EFFICIENT]": (
        ("float16", [(2, 2, 2, 8), (2, 2, 3, 8), (2, 2, 3, 8)], None, 0.0, True, False,
         ["FLASH_ATTENTION", "EFFICIENT_ATTENTION"], False), "efficient"),
    "float16 head dim 264, FLASH": (
        ("float16", [(1, 1, 2, 264)] * 3, None, 0.0, False, False, ["FLASH_ATTENTION"], False),
        NO_KERNEL),
    "bfloat16 grouped queries, FLASH": (
        ("bfloat16", [(1, 4, 2, 8), (1, 2, 2, 8), (1, 2, 2, 8)], None, 0.0, False, True,
         ["FLASH_ATTENTION"], False), "flash"),
    "bfloat16, CUDNN": (
        ("bfloat16", [(2, 2, 4, 8)] * 3, None, 0.0, False, False, ["CUDNN_ATTENTION"], False),
        "cudnn"),
    "float32 head dim 6, EFFICIENT": (
        ("float32", [(2, 2, 1, 6)] * 3, None, 0.0, False, False, ["EFFICIENT_ATTENTION"], False),
        NO_KERNEL),
    "float32 with dropout, EFFICIENT": (
        ("float32", [(2, 2, 1, 4)] * 3, None, 0.1, False, False, ["EFFICIENT_ATTENTION"], False),
        "efficient"),
    "float32, every backend enabled": (
        ("float32", [(2, 2, 1, 4)] * 3, None, 0.0, False, False, None, False), "efficient"),
    "float64, math turned off": (
        ("float64", [(2, 2, 1, 4)] * 3, None, 0.0, False, False, None, True), INVALID_BACKEND),
    "float64, math turned off, FLASH and EFFICIENT": (
        ("float64", [(2, 2, 1, 4)] * 3, None, 0.0, False, False,
         ["FLASH_ATTENTION", "EFFICIENT_ATTENTION"], True), NO_KERNEL),
    "float32 queries on float16 keys: torch's own check before any choice": (
        ("float32", [(2, 2, 1, 4)] * 3, None, 0.0, False, False, ["FLASH_ATTENTION"], False,
         "float16"), "Expected query, key, and value to have the same dtype"),
    "float32, math turned off": (
        ("float32", [(2, 2, 1, 4)] * 3, None, 0.0, False, False, None, True), "efficient"),
}

#: Runs each case in the GPU view on fake CUDA tensors, in a process of its own (the view
#: sets CUDA's device guard up for the process), and prints the kernel each ran or its error.
CHOOSER = """
import contextlib, json, sys, torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode
from fxcore.worker.devices.cuda_view import cuda_view

FUSED = {"_scaled_dot_product_flash_attention": "flash",
         "_scaled_dot_product_efficient_attention": "efficient",
         "_scaled_dot_product_cudnn_attention": "cudnn"}

class Kernels(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.ran = []
    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func._schema.name.split("::")[-1]
        if name in FUSED:
            self.ran.append(FUSED[name])
        return func(*args, **(kwargs or {}))

answers = {}
# "gpu": real CUDA tensors on a GPU, the cases' reference (the GPU tier).
view = (contextlib.nullcontext(), contextlib.nullcontext()) if sys.argv[2:] == ["gpu"] \
    else (cuda_view(), FakeTensorMode())
with view[0], view[1]:
    for name, (dtype, shapes, mask, dropout, causal, gqa, backends, math_off, *key_dtype) \
            in json.loads(sys.argv[1]).items():
        dtypes = [getattr(torch, dtype)] + [getattr(torch, key_dtype[0] if key_dtype
                                                    else dtype)] * 2
        q, k, v = (torch.empty(shape, dtype=kind, device="cuda")
                   for shape, kind in zip(shapes, dtypes))
        attn_mask = None if mask is None else torch.ones(mask, dtype=torch.bool, device="cuda")
        chosen = (sdpa_kernel([getattr(SDPBackend, b) for b in backends]) if backends
                  else contextlib.nullcontext())
        torch.backends.cuda.enable_math_sdp(not math_off)
        try:
            with chosen, Kernels() as kernels:
                F.scaled_dot_product_attention(q, k, v, attn_mask, dropout, causal,
                                               enable_gqa=gqa)
            answers[name] = kernels.ran[0] if kernels.ran else "math"
        except RuntimeError as error:
            answers[name] = str(error)
        torch.backends.cuda.enable_math_sdp(True)
print(json.dumps(answers))
"""


def _chosen(*where: str) -> dict[str, str]:
    arguments = json.dumps({name: case for name, (case, _) in CASES.items()})
    completed = subprocess.run([sys.executable, "-c", CHOOSER, arguments, *where],
                               capture_output=True, text=True, timeout=240,
                               env=dict(os.environ))
    assert completed.returncode == 0, completed.stderr[-3000:]
    return json.loads(completed.stdout.splitlines()[-1])


@pytest.mark.slow
def test_attention_picks_the_kernel_an_h100_picks() -> None:
    answers = _chosen()
    assert set(answers) == set(CASES)
    # An error is compared by its start: torch's own message goes on with the dtypes.
    assert {name: answer for name, answer in answers.items()
            if not answer.startswith(CASES[name][1])} == {}


@pytest.mark.gpu
@pytest.mark.skipif(shutil.which("nvidia-smi") is None, reason="no NVIDIA GPU here")
def test_a_gpu_picks_the_kernels_the_cases_expect() -> None:
    """The cases on a GPU's real CUDA tensors (an sm90 GPU: an H100 or H200), in a process of
    their own: the reference the view's choices are argued from."""
    answers = _chosen("gpu")
    assert {name: answer for name, answer in answers.items()
            if not answer.startswith(CASES[name][1])} == {}


#: The corpus's classes and what an H100 gives them (see the docstring): traceable whole in
#: export and compile, or no kernel.
TRACEABLE = {"EfficientOrMath", "FlashInHalf", "FusedOnly"}
NO_KERNEL_CLASSES = {"FlashInFloat32": NO_KERNEL, "FusedOnlyInDouble": INVALID_BACKEND}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    workspace = tmp_path_factory.mktemp("attention")
    for name in ("attention_backends.py", "attention_flags.py"):
        shutil.copy(CORPUS / name, workspace)
    completed = cli_support.fx_lsp("check", "--no-cache", "--mode", "export,compile",
                                   "--output-format", "json", ".", cwd=workspace)
    assert completed.returncode in (0, 1), completed.stderr
    return parse_report(completed.stdout)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["export", "compile"])
def test_attention_corpus_gets_an_h100s_verdicts(report: dict[str, Any], mode: str) -> None:
    verdicts = {module["class"]: module for module in report["modules"]
                if module["mode"] == mode}
    assert set(verdicts) == TRACEABLE | set(NO_KERNEL_CLASSES)
    for name, module in verdicts.items():
        assert GPU_NOTE in module["capture_notes"], name
        if name in TRACEABLE:
            assert module["status"] == "traceable", (name, module["reason"])
            op = ("torch.ops.aten.scaled_dot_product_attention.default" if mode == "export"
                  else "torch._C._nn.scaled_dot_product_attention")
            assert op in {str(node["target"]) for node in module["nodes"]}, name
        else:
            assert module["status"] == "not-traced", name
            assert NO_KERNEL_CLASSES[name] in module["reason"], (name, module["reason"])
    whole = {d["classes"][0] for d in report["diagnostics"] if d["mode"] == "compile"}
    assert not whole & TRACEABLE
