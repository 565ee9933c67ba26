"""The random generators user code draws from, seeded so that a class gets the same verdict on
every run and machine, whatever order its file's classes and the modes run in.

A forward that draws from Python's ``random`` (``if random.random() > self.p``) or NumPy's
global generator is traced down the outcome it draws (FX206), and a constructor that draws
builds another instance each run; torch's own generator gives CPU-built weights and the
example values the input search runs forward on. The worker seeds all three from one constant
(``SEED``) before each class is built and again before each capture and the input search
before it (``fxcore.worker.pipeline.job``, ``fxcore.worker.pipeline.submodule_instances``):
every capture then starts from the same state, whatever ran before it. The references that
tests and benchmarks compare with (plain torch.fx tracing) seed the same way at the same
points, so both draw the same outcomes.

NumPy's generator is seeded only where numpy is imported already (torch imports it where it
is installed): code that never imported numpy cannot draw from it, and a worker must not
import a package the user's code does not. ``numpy.random`` itself is imported for it where
numpy is: it seeds itself from the operating system when first imported, which a forward's
first ``np.random.rand()`` would otherwise do.
"""

from __future__ import annotations

import importlib
import random
import sys
from typing import Any

import torch

#: The seed of every generator, for every class: a constant, so no run or machine differs.
SEED = 0


def seed_generators() -> None:
    """Seed Python's ``random``, NumPy's global generator (where numpy is imported) and
    torch's CPU generator with ``SEED``."""
    random.seed(SEED)
    numpy_random = _numpy_random()
    if numpy_random is not None:
        numpy_random.seed(SEED)
    # The CPU generator alone: a worker never initialises an accelerator (the GPU view fakes
    # one), and ``torch.manual_seed`` queues a lazy seed for each accelerator with the stack
    # it was called from, a quarter of the time of a small class's fx verdict.
    torch.random.default_generator.manual_seed(SEED)


def drawn_states() -> tuple[Any, ...]:
    """The states of Python's and NumPy's global generators, which change with each draw:
    two that differ tell that code drew from them in between (FX206)."""
    numpy_random = _numpy_random()
    if numpy_random is None:
        return (random.getstate(),)
    state = numpy_random.get_state(legacy=False)
    return (random.getstate(), state["state"]["key"].tobytes(), state["state"]["pos"],
            state["has_gauss"], state["gauss"])


def _numpy_random() -> Any:
    """``numpy.random`` where numpy is imported, else None."""
    if "numpy" not in sys.modules:
        return None
    try:
        return importlib.import_module("numpy.random")
    except ImportError:  # a broken or partial numpy: then nothing can draw from it either
        return None
