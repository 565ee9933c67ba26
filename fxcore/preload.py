"""Imported once by the zygote, so that every forked job starts with torch loaded.

Besides torch itself, it loads what torch imports lazily on first use while building and
tracing models, which every child would otherwise pay for again: sympy through
``symbolic_shapes`` (the first meta-device ``arange``/``cat``), ``torch._dynamo`` (meta
initialisation of ``nn.Embedding``), and the table of overridable functions that the first
``__torch_function__`` dispatch builds. Measured: a Llama-7B-sized definition's job fell
from about 3 s to about 1 s of CPU, for about 70 MiB more in the zygote.

``gc.freeze()`` moves everything imported so far into the permanent generation: without it
a child's first full collection walks all of torch's objects (about 0.2 s, at random times).
"""

import gc

import torch
import torch._dynamo
import torch.fx
import torch.fx.experimental.symbolic_shapes
import torch.overrides

import fxcore.job  # noqa: F401

torch.overrides.get_overridable_functions()
torch.set_num_threads(1)  # jobs run side by side; tracing itself needs no threads
gc.collect()
gc.freeze()
