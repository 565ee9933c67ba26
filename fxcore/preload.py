"""Imported once by the fork server, so that every forked job starts with torch loaded.

``gc.freeze()`` moves everything imported so far into the permanent generation: without it
a child's first full collection walks all of torch's objects (about 0.2 s, at random times).
"""

import gc

import torch
import torch.fx

import fxcore.job  # noqa: F401

torch.set_num_threads(1)  # jobs run side by side; tracing itself needs no threads
gc.collect()
gc.freeze()
