"""What marks code as written for a GPU: the worker judges a class that reads one of these in
a GPU's view (``fxcore.worker.devices.device_choice``), and the host never reuses a verdict of
a file that has one (``fxcore.workspace.class_keys``), since the view depends on the machine."""

from __future__ import annotations

import re

#: Attributes that only a GPU's code reads: cuDNN's settings (``torch.backends.cudnn``) and
#: the attention backends only a GPU has (``SDPBackend.FLASH_ATTENTION`` in an
#: ``sdpa_kernel`` choice); ``.cuda`` itself covers ``torch.cuda.amp`` and
#: ``torch.backends.cuda``.
GPU_ATTRIBUTES = frozenset({"cuda", "cudnn", "FLASH_ATTENTION", "EFFICIENT_ATTENTION",
                            "CUDNN_ATTENTION"})

#: Any of them in a file's text, in any case (a ``"cuda:0"`` string too): a superset of what
#: the worker reads from the syntax tree, for a check that must not miss one.
GPU_TEXT = re.compile("|".join(re.escape(name) for name in sorted(GPU_ATTRIBUTES)),
                      re.IGNORECASE)
