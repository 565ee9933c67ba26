"""Imported once by the zygote, so that every forked job starts with torch loaded.

Besides torch itself, it loads what torch imports lazily on first use while building and
tracing models, which every child would otherwise pay for again: sympy through
``symbolic_shapes`` (the first meta-device ``arange``/``cat``), ``torch._dynamo`` (meta
initialisation of ``nn.Embedding``), and the table of overridable functions that the first
``__torch_function__`` dispatch builds. Measured: a Llama-7B-sized definition's job fell
from about 3 s to about 1 s of CPU, for about 70 MiB more in the zygote. And what
``sympy.simplify`` imports on its first call (``sympy.physics``, 0.3 to 0.5 s of CPU), which
torch's ``FloorDiv`` calls on sizes with a common factor: a symbolic compile or export of a
model that reshapes, such as compile mode's loop of calls makes.

It also runs the common layers once on meta tensors: their meta kernels are registered on
first use, and shape propagation of a model with batch norm would otherwise pay over a second
in each child (measured: ``batch_norm`` 1.3 s, ``conv2d`` 0.6 s on first use).

It imports what each child imports before its job, too: the sandbox, and with it the result
cache's fingerprint of fxcore's own files, which hashing took 30 ms of CPU in every child.

``gc.freeze()`` moves everything imported so far into the permanent generation: without it
a child's first full collection walks all of torch's objects (about 0.2 s, at random times).
"""

import gc

import sympy
import torch

from fxcore.worker.devices import accelerator_calls, accelerator_guard

# Before anything else of torch's or fx-lsp's runs: the record sees every later call, and
# the guard keeps the warm-ups below (a compile asks whether CUDA is there) off the GPU.
accelerator_calls.record_if_asked()
accelerator_guard.guard()

import torch._dynamo  # noqa: E402
import torch.fx  # noqa: E402
import torch.fx.experimental.symbolic_shapes  # noqa: E402
import torch.overrides  # noqa: E402

import fxcore.host.sandbox  # noqa: E402  (each child enters it before its job)
import fxcore.worker.pipeline.job  # noqa: E402, F401
from fxcore.worker.running.seeding import seed_generators  # noqa: E402

torch.overrides.get_overridable_functions()
sympy.simplify(sympy.Symbol("s", integer=True, positive=True) / 2)
# Imports numpy.random where torch imported numpy, which each child's first seeding would.
seed_generators()


def _warm_meta_kernels() -> None:
    from torch.nn import functional

    def meta(*shape: int) -> torch.Tensor:
        return torch.empty(shape, device="meta")

    image, channels = meta(2, 3, 8, 8), meta(3)
    functional.conv1d(meta(2, 3, 8), meta(4, 3, 3))
    functional.conv2d(image, meta(4, 3, 3, 3))
    functional.conv_transpose2d(image, meta(3, 4, 3, 3))
    functional.batch_norm(image, channels, channels, training=True)
    functional.batch_norm(image, channels, channels, training=False)
    functional.group_norm(image, 1)
    functional.instance_norm(image)
    functional.layer_norm(image, (8,))
    functional.max_pool2d(image, 2)
    functional.avg_pool2d(image, 2)
    functional.adaptive_avg_pool2d(image, 1)
    functional.interpolate(image, scale_factor=2.0)
    functional.embedding(torch.empty(2, 3, dtype=torch.long, device="meta"), meta(10, 4))
    functional.scaled_dot_product_attention(meta(2, 2, 8, 4), meta(2, 2, 8, 4),
                                            meta(2, 2, 8, 4))
    torch.softmax(image, -1) @ meta(8, 8)


_warm_meta_kernels()
torch.set_num_threads(1)  # jobs run side by side; tracing itself needs no threads
gc.collect()
gc.freeze()
