"""``F.scaled_dot_product_attention`` on fake CUDA tensors picks the kernel an H100 picks.

On CUDA tensors torch chooses among its attention kernels in C++
(``aten/src/ATen/native/transformers/cuda/sdp_utils.cpp``, ``select_sdp_backend``): the
backends ``sdpa_kernel`` and ``torch.backends.cuda.enable_*_sdp`` leave enabled are tried in
torch's priority order, each with its checks (dtype, head dim, mask, causal shapes, the GPU's
architecture), and none fitting is "No available kernel. Aborting execution.". Without a GPU
neither build can answer as one: a CPU-only build has no CUDA chooser and runs the math
kernel whatever is enabled (so ``sdpa_kernel(SDPBackend.FLASH_ATTENTION)`` on float32 ran), and
a CUDA build's chooser finds no device and rejects every fused kernel (so flash on float16
found no kernel).

In the view, ``aten::scaled_dot_product_attention`` on CUDA tensors is this module's
(``AutogradCUDA``, torch's own op, so export's and dynamo's graphs are unchanged): it applies
the checks of ``sdp_utils.cpp`` (and ``sdp_utils_cpp.h``) for an sm90 GPU and calls the
chosen kernel, whose meta implementation gives the fake result, as on a GPU. Math runs
torch's own composite. Not emulated (the checks are a GPU's build's, the cuDNN version is
not known without one): cuDNN attention is accepted up to head dim 128, and a build that
prefers cuDNN on sm90 (cuDNN newer than 9.15) would run cuDNN where this runs flash. The
first changes a verdict only where cuDNN alone is allowed with head dims over 128; the second
only the kernel under torch's ``scaled_dot_product_attention``. Nested tensors are left to
torch (their dispatch key is not ``AutogradCUDA``).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence

import torch

# What sdp_utils.cpp's TORCH_GUARD_OR_FALSE is in Python.
from torch.fx.experimental.symbolic_shapes import guard_or_false

from fxcore.worker.devices.cuda_kernels import register_on_cuda

#: torch's SDPBackend numbers (``torch._C._get_sdp_priority_order``).
MATH, FLASH, EFFICIENT, CUDNN, OVERRIDEABLE = 0, 1, 2, 3, 4
#: torch's default priority order, where this torch cannot say its own.
_DEFAULT_ORDER = (FLASH, EFFICIENT, MATH, CUDNN, OVERRIDEABLE)
#: The error a GPU gives where no enabled backend fits (select_sdp_backend's TORCH_CHECK).
NO_KERNEL = "No available kernel. Aborting execution."
#: The error a GPU gives where its chooser reaches the overrideable backend, enabled (as it is
#: unless ``sdpa_kernel`` leaves it out): the CUDA chooser's switch has no case for it, and its
#: ``default: TORCH_CHECK(false, "Invalid backend")`` raises (an H200 with torch 2.11, math
#: turned off with ``enable_math_sdp(False)`` and float64 inputs; pytorch#166962).
INVALID_BACKEND = "Invalid backend"

_Check = Callable[["_Call"], bool]


class _Call:
    """One call's arguments, as sdp_utils.cpp's ``sdp_params``."""

    def __init__(self, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                 attn_mask: torch.Tensor | None, dropout_p: float, is_causal: bool,
                 enable_gqa: bool) -> None:
        self.query, self.key, self.value = query, key, value
        self.attn_mask, self.dropout, self.is_causal = attn_mask, dropout_p, is_causal
        self.enable_gqa = enable_gqa
        self.tensors = (query, key, value)


def _enabled(name: str) -> bool:
    getter = getattr(torch._C, f"_get_{name}_sdp_enabled", None)
    return bool(getter()) if callable(getter) else False


def _four_dimensional(call: _Call) -> bool:  # check_tensor_shapes
    return all(tensor.dim() == 4 for tensor in call.tensors)


def _nonzero_sequences(call: _Call) -> bool:  # check_nonzero_sequence_lengths_dense
    return all(guard_or_false(tensor.size(-2) != 0) for tensor in call.tensors)


def _unit_last_stride(ignore_singleton: bool) -> _Check:
    """check_last_dim_stride_equals_1_dense (flash and cuDNN ignore a last dim of 1)."""
    def check(call: _Call) -> bool:
        return all(guard_or_false(tensor.stride(-1) == 1)
                   or (ignore_singleton and guard_or_false(tensor.size(-1) == 1))
                   for tensor in call.tensors)
    return check


def _batch_and_heads(call: _Call) -> bool:
    """check_batch_size_and_num_heads_dense, with grouped- and multi-query attention as the
    CUDA kernels support them (sdp_utils_cpp.h)."""
    q, k, v = call.tensors
    if not (guard_or_false(q.size(0) == k.size(0)) and guard_or_false(q.size(0) == v.size(0))):
        return False
    q_heads, k_heads, v_heads = q.size(-3), k.size(-3), v.size(-3)
    if call.enable_gqa:  # check_grouped_query_attention
        return guard_or_false(k_heads == v_heads) and guard_or_false(q_heads % k_heads == 0)
    same = guard_or_false(q_heads == k_heads) and guard_or_false(q_heads == v_heads)
    return same or (guard_or_false(k_heads == 1) and guard_or_false(v_heads == 1))


def _dtype_in(*dtypes: torch.dtype) -> _Check:
    return lambda call: all(tensor.dtype == call.query.dtype for tensor in call.tensors) \
        and call.query.dtype in dtypes


def _flash_dtypes(call: _Call) -> bool:  # check_dtypes_flash_attention: FA3 from sm90
    allowed = [torch.float16, torch.bfloat16]
    if _enabled("fa3") and hasattr(torch, "float8_e4m3fn"):
        allowed.append(torch.float8_e4m3fn)
    return _dtype_in(*allowed)(call)


def _flash_head_dim(call: _Call) -> bool:  # check_head_dim_size_flash: equal, at most 256
    q, k, v = (tensor.size(-1) for tensor in call.tensors)
    return guard_or_false(q == k) and guard_or_false(q == v) and guard_or_false(q <= 256)


def _no_mask(call: _Call) -> bool:  # check_for_attn_mask
    return call.attn_mask is None


def _square_if_causal(call: _Call) -> bool:  # check_flash_causal_non_square_seqlens
    return not call.is_causal or guard_or_false(call.query.size(-2) == call.key.size(-2))


def _alignment(call: _Call) -> int:
    """minimum_gemm_alignment on sm80 and newer: 128 bits of the dtype, at least 4."""
    return max(4, 128 // (call.query.element_size() * 8))


def _efficient_head_dim(call: _Call) -> bool:  # check_head_dim_size_mem_efficient
    q, k, v = (tensor.size(-1) for tensor in call.tensors)
    alignment = _alignment(call)
    return guard_or_false(q == k) and guard_or_false(q % alignment == 0) \
        and guard_or_false(q > 0) and guard_or_false(v % alignment == 0) \
        and guard_or_false(v > 0)


def _efficient_offsets(call: _Call) -> bool:  # check_data_ptr_alignment_mem_efficient
    alignment_bytes = _alignment(call) * call.query.element_size()
    return all(guard_or_false(tensor.numel() == 0)
               or not guard_or_false(
                   tensor.storage_offset() * tensor.element_size() % alignment_bytes != 0)
               for tensor in call.tensors)


def _not_deterministic(call: _Call) -> bool:  # check_cudnn_deterministic
    return not torch.are_deterministic_algorithms_enabled() \
        or torch.is_deterministic_algorithms_warn_only_enabled()


def _cudnn_mask(call: _Call) -> bool:  # check_attn_mask_shape
    mask = call.attn_mask
    if mask is None:
        return True
    if mask.requires_grad:
        return False
    q = call.query
    if not (guard_or_false(mask.size(-2) == q.size(2)) or guard_or_false(mask.size(-2) == 1)):
        return False
    if not (guard_or_false(mask.size(-1) == call.key.size(2))
            or guard_or_false(mask.size(-1) == 1)):
        return False
    if mask.dim() == 2:
        return True
    return mask.dim() == 4 \
        and (guard_or_false(mask.size(0) == 1) or guard_or_false(mask.size(0) == q.size(0))) \
        and (guard_or_false(mask.size(1) == 1) or guard_or_false(mask.size(1) == q.size(1)))


def _cudnn_shapes(call: _Call) -> bool:  # check_cudnn_dropout, check_cudnn_tensor_shapes
    q, k, v = call.tensors
    d_qk, d_v = q.size(3), v.size(3)
    return call.dropout * 16.0 == math.floor(call.dropout * 16.0) \
        and guard_or_false(q.size(0) <= 65535) and guard_or_false(q.size(1) <= 65535) \
        and guard_or_false(d_qk <= 128) and guard_or_false(d_v <= 128) \
        and guard_or_false(d_qk % 8 == 0) and guard_or_false(d_v % 8 == 0) \
        and guard_or_false(k.size(2) != 1) \
        and (call.dropout == 0.0 or guard_or_false(q.size(2) != 1))


#: Each backend's checks on sm90, in sdp_utils.cpp's order (can_use_*_attention).
_CHECKS: dict[int, Sequence[_Check]] = {
    FLASH: (lambda call: _enabled("flash"), _four_dimensional, _no_mask, _flash_head_dim,
            _square_if_causal, _flash_dtypes, _batch_and_heads, _nonzero_sequences,
            _unit_last_stride(ignore_singleton=True)),
    EFFICIENT: (lambda call: _enabled("mem_efficient"), _four_dimensional,
                _efficient_head_dim, _efficient_offsets, _nonzero_sequences,
                _unit_last_stride(ignore_singleton=False), _batch_and_heads,
                _dtype_in(torch.float16, torch.float32, torch.bfloat16)),
    CUDNN: (lambda call: _enabled("cudnn"), _four_dimensional, _not_deterministic,
            _dtype_in(torch.float16, torch.bfloat16), _cudnn_mask, _nonzero_sequences,
            _unit_last_stride(ignore_singleton=True), _batch_and_heads, _cudnn_shapes),
    MATH: (lambda call: _enabled("math"),),
}


def _priority_order() -> tuple[int, ...]:
    order = getattr(torch._C, "_get_sdp_priority_order", None)
    return tuple(order()) if callable(order) else _DEFAULT_ORDER


def h100_backend(call: _Call) -> int | None:
    """The backend an H100 runs ``call`` with (select_sdp_backend), None where none fits;
    raises where the chooser itself does."""
    if not any(_enabled(name) for name in ("math", "flash", "mem_efficient", "cudnn")):
        return None
    for backend in _priority_order():
        if backend == OVERRIDEABLE and _enabled("overrideable"):
            raise RuntimeError(INVALID_BACKEND)
        checks = _CHECKS.get(backend)
        if checks is not None and all(check(call) for check in checks):
            return backend
    return None


def _valid(call: _Call) -> bool:
    """What attention.cpp's ``validate_sdpa_input`` accepts, before any kernel is chosen."""
    q = call.query
    mask = call.attn_mask
    return all(t.dtype == q.dtype and t.device == q.device and t.dim() >= 2
               for t in call.tensors) \
        and (mask is None or mask.dtype in (torch.bool, torch.float32, q.dtype))


def _float_mask(mask: torch.Tensor | None, dtype: torch.dtype) -> torch.Tensor | None:
    """convert_boolean_attn_mask: True attends, False is -inf."""
    if mask is None or mask.dtype != torch.bool:
        return mask
    return torch.zeros(mask.shape, dtype=dtype, device=mask.device).masked_fill(
        mask.logical_not(), float("-inf"))


def _efficient_bias(mask: torch.Tensor, query: torch.Tensor,
                    key: torch.Tensor) -> torch.Tensor:
    """attention.cpp's preprocess_mask: 4-D, its last dim padded to 16 and sliced back."""
    mask = mask.expand(query.size(0), query.size(1), query.size(2), key.size(2))
    length = mask.size(-1)
    if guard_or_false(length % 16 != 0):
        padded = torch.nn.functional.pad(mask, (0, 16 - length % 16))
        return padded[..., :length]
    return mask


def _wants_logsumexp(call: _Call) -> bool:
    return torch.is_grad_enabled() and any(tensor.requires_grad for tensor in call.tensors)


def _attention(query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
               attn_mask: torch.Tensor | None = None, dropout_p: float = 0.0,
               is_causal: bool = False, *, scale: float | None = None,
               enable_gqa: bool = False) -> torch.Tensor:
    """``aten::scaled_dot_product_attention`` for CUDA tensors in the view."""
    aten = torch.ops.aten
    call = _Call(query, key, value, attn_mask, dropout_p, is_causal, enable_gqa)
    backend = h100_backend(call) if _valid(call) else MATH  # torch's composite says why not
    if backend is None:
        raise RuntimeError(NO_KERNEL)
    if backend == FLASH:  # its head dim padded to a multiple of 8, the output sliced back
        head_dim = query.size(-1)
        pad = (8 - head_dim % 8) % 8
        padded = [torch.nn.functional.pad(t, (0, pad)) if pad else t for t in call.tensors]
        if pad and scale is None:  # the scale of the head dim before padding
            scale = 1.0 / math.sqrt(head_dim)
        out = aten._scaled_dot_product_flash_attention(
            *padded, dropout_p, is_causal, False, scale=scale)[0]
        return out[..., :head_dim] if pad else out
    mask = _float_mask(attn_mask, query.dtype)
    if backend == EFFICIENT:
        bias = None if mask is None else _efficient_bias(mask, query, key)
        return aten._scaled_dot_product_efficient_attention(
            query, key, value, bias, _wants_logsumexp(call), dropout_p, is_causal,
            scale=scale)[0]
    if backend == CUDNN:
        return aten._scaled_dot_product_cudnn_attention(
            query, key, value, mask, _wants_logsumexp(call), dropout_p, is_causal, False,
            scale=scale)[0]
    # torch's composite: on a CPU-only build and on a CUDA build without a device, its own
    # chooser runs math wherever math is enabled, which is what was chosen here.
    return aten.scaled_dot_product_attention.default.decompose(
        query, key, value, attn_mask, dropout_p, is_causal, scale=scale,
        enable_gqa=enable_gqa)


def choose_as_h100(stack: contextlib.ExitStack) -> str | None:
    """While ``stack`` is open, attention on CUDA tensors picks an H100's kernel; why not,
    where this torch cannot have it."""
    try:
        register_on_cuda(stack, [("scaled_dot_product_attention", _attention)])
    except (RuntimeError, AttributeError, TypeError) as refused:
        return ("the choice of a GPU-only attention kernel is not emulated on this torch "
                f"({type(refused).__name__}: {refused})")
    return None

