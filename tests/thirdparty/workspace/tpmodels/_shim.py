"""Make ``import torchvision`` (and so ``import timm``) work next to a CPU-only torch.

The PyPI torchvision wheel is a CUDA build. Next to the CPU torch its C extension (``_C.so``)
cannot load (it links libcudart and CUDA-built torch symbols); torchvision then carries on
without its custom operators, but ``torchvision/_meta_registrations.py`` still registers a fake
kernel for ``torchvision::nms`` at import time, which fails with
``RuntimeError: operator torchvision::nms does not exist``.

:func:`install` detects that honestly: it tries to load the real extensions the way torchvision
does (``torch.ops.load_library`` on each ``torchvision/_C*.so``). Only when that fails does it
define the operator *schemas* (no kernels) with ``torch.library``, so the import succeeds.
Calling one of these operators eagerly still fails ("no kernel registered"), which is the truth:
the ops are not available on this machine. Building and symbolically tracing models does not
run them.

It also sets the Hugging Face offline variables: nothing is ever downloaded.

This module must be imported before torchvision; the workspace package's ``__init__`` does it,
so fx-lsp's worker processes get it too, with no conftest involved.
"""

from __future__ import annotations

import glob
import importlib.machinery
import importlib.util
import os

import torch

#: The operator schemas of torchvision's C extension (torchvision/csrc/ops/*.cpp, 0.28).
TORCHVISION_SCHEMAS = (
    "nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
    "box_iou_rotated(Tensor boxes1, Tensor boxes2) -> Tensor",
    "roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor",
    "_roi_align_backward(Tensor grad, Tensor rois, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width, SymInt batch_size, SymInt channels, SymInt height, SymInt width, "
    "int sampling_ratio, bool aligned) -> Tensor",
    "qroi_align(Tensor input, Tensor rois, float input_scale, int input_zero_point, "
    "float rois_scale, int rois_zero_point, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width, int sampling_ratio, bool aligned) -> Tensor",
    "ps_roi_align(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width, int sampling_ratio) -> (Tensor, Tensor)",
    "_ps_roi_align_backward(Tensor grad, Tensor rois, Tensor channel_mapping, "
    "float spatial_scale, SymInt pooled_height, SymInt pooled_width, int sampling_ratio, "
    "SymInt batch_size, SymInt channels, SymInt height, SymInt width) -> Tensor",
    "roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width) -> (Tensor, Tensor)",
    "_roi_pool_backward(Tensor grad, Tensor rois, Tensor argmax, float spatial_scale, "
    "SymInt pooled_height, SymInt pooled_width, SymInt batch_size, SymInt channels, "
    "SymInt height, SymInt width) -> Tensor",
    "ps_roi_pool(Tensor input, Tensor rois, float spatial_scale, SymInt pooled_height, "
    "SymInt pooled_width) -> (Tensor, Tensor)",
    "_ps_roi_pool_backward(Tensor grad, Tensor rois, Tensor channel_mapping, "
    "float spatial_scale, SymInt pooled_height, SymInt pooled_width, SymInt batch_size, "
    "SymInt channels, SymInt height, SymInt width) -> Tensor",
    "deform_conv2d(Tensor input, Tensor weight, Tensor offset, Tensor mask, Tensor bias, "
    "SymInt stride_h, SymInt stride_w, SymInt pad_h, SymInt pad_w, SymInt dilation_h, "
    "SymInt dilation_w, SymInt groups, SymInt offset_groups, bool use_mask) -> Tensor",
    "_deform_conv2d_backward(Tensor grad, Tensor input, Tensor weight, Tensor offset, "
    "Tensor mask, Tensor bias, SymInt stride_h, SymInt stride_w, SymInt pad_h, SymInt pad_w, "
    "SymInt dilation_h, SymInt dilation_w, SymInt groups, SymInt offset_groups, "
    "bool use_mask) -> (Tensor, Tensor, Tensor, Tensor, Tensor)",
)

#: What :func:`install` found: "no-torchvision", "extension" (the real ops loaded),
#: "shim" (schemas defined here), or None before it ran.
status: str | None = None
#: Why the real extension did not load (when status == "shim").
extension_error: str | None = None
_LIB: torch.library.Library | None = None

HF_OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "TRANSFORMERS_NO_ADVISORY_WARNINGS": "1",
    "TOKENIZERS_PARALLELISM": "false",
}


def _has_op(name: str) -> bool:
    try:
        getattr(torch.ops.torchvision, name)
    except (AttributeError, RuntimeError):
        return False
    return True


def install() -> str:
    """Load torchvision's real operators, or define their schemas when they cannot load."""
    global status, extension_error, _LIB
    for key, value in HF_OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
    if status is not None:
        return status
    if _has_op("nms"):  # already loaded (torchvision imported, or an earlier shim)
        status = "extension"
        return status
    spec = importlib.util.find_spec("torchvision")  # locates, does not import, the package
    if spec is None or not spec.submodule_search_locations:
        status = "no-torchvision"
        return status
    # torchvision 0.29 and later split the operators over _C and _C_stable: load every one.
    candidates = sorted({
        path
        for folder in spec.submodule_search_locations
        for suffix in importlib.machinery.EXTENSION_SUFFIXES
        for path in glob.glob(os.path.join(folder, "_C*" + suffix))
    })
    for path in candidates:
        try:
            torch.ops.load_library(path)
        except (OSError, ImportError, RuntimeError) as exc:
            extension_error = f"{type(exc).__name__}: {exc}"
    if _has_op("nms"):
        status = "extension"
        return status
    if not candidates:
        extension_error = "torchvision/_C extension not found"
    _LIB = torch.library.Library("torchvision", "DEF")
    for schema in TORCHVISION_SCHEMAS:
        _LIB.define(schema)
    status = "shim"
    return status


install()
