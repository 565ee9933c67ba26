"""The one scale of fx-lsp's wall-clock limits, for slow or shared CI machines.

``FX_LSP_TIMEOUT_SCALE`` (a number, at least 1; unset is 1) multiplies every limit counted in
wall-clock time: the host's time-out of a class (``timeout``, after which it stops the worker:
FX102) and the worker's wall-clock backstops of its budgets
(``fxcore.worker.running.budget_clock``).
The budgets themselves count the worker's CPU time and are not scaled: how far a search goes,
and so what a verdict says, is the same on a loaded machine as on an idle one; the scale only
gives a loaded machine the wall-clock time to get there. fx-lsp's own test suite sets it to
10, out of the reach of any load (``tests/conftest.py``). Any other value (not a number, below
1, infinite) is ignored with a one-line warning, once per process and value.

Read in the host when a job runs, and in the worker from the environment its zygote started
with (``FX_LSP_`` names are passed on: ``fxcore.host.worker_environment``).
"""

from __future__ import annotations

import functools
import logging
import math
import os

ENVIRONMENT_VARIABLE = "FX_LSP_TIMEOUT_SCALE"


def timeout_scale() -> float:
    """The scale ``FX_LSP_TIMEOUT_SCALE`` sets: 1 unless set to a finite number above 1."""
    text = os.environ.get(ENVIRONMENT_VARIABLE, "").strip()
    if not text:
        return 1.0
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 1):
        _ignored(text)
        return 1.0
    return value


@functools.cache
def _ignored(text: str) -> None:
    logging.getLogger(__name__).warning(
        "fx-lsp: %s=%r ignored: it must be a number of at least 1 (the time-outs are not "
        "scaled)", ENVIRONMENT_VARIABLE, text)
