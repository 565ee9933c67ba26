"""What fx-lsp reads as a limit of the meta device (``fxcore.worker.meta.meta_limits``) in
torch's errors: a device mismatch is one only where the meta device is one of the two. Every
dynamo error of torch 2.11 on ends with the address of its graph-break pages
(``meta-pytorch.github.io``), which read as the meta device: a class judged for a GPU whose
forward makes a tensor without a device (``torch.arange(n)``, CPU on a GPU, beside CUDA
weights) got "not checkable on meta" (FX503) in compile, where an H200 with torch 2.11 fails it
(benchmarks/gpu/answers/, ``export_traceable.py:PositionalEmbedding``)."""

from __future__ import annotations

from fxcore.worker.meta.meta_limits import collides_with_cpu, needs_real_data

PAGE = ("\n\n For more details about this graph break, please visit: "
        "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb4315.html")


def _dynamo_error(devices: str) -> RuntimeError:
    return RuntimeError(
        "RuntimeError when making fake tensor call\n  Explanation: Dynamo failed to run FX node "
        "with fake tensors: call_function embedding: got RuntimeError('Unhandled FakeTensor "
        f"Device Propagation for aten.embedding.default, found two different devices "
        f"{devices}')" + PAGE)


def test_a_cuda_tensor_beside_a_cpu_one_is_no_meta_limit() -> None:
    error = _dynamo_error("cuda:0, cpu")
    assert needs_real_data(error) is None
    assert not collides_with_cpu(error)


def test_a_meta_tensor_beside_a_cpu_one_is_one() -> None:
    error = _dynamo_error("meta, cpu")
    limit = needs_real_data(error)
    assert limit is not None and "meta device beside CPU tensors" in limit.what
    assert collides_with_cpu(error)
