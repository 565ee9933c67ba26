"""The ``nn.Module`` modes (``model.train()``, ``model.eval()``) a class is judged in, as the
host knows them, without torch: the ``module-mode`` setting's values and their check. The
worker applies them (``fxcore.worker.module_modes.judging``).
"""

from __future__ import annotations

TRAIN = "train"
EVAL = "eval"
#: "auto": export in eval mode, as deployment does; compile, used for training as much as
#: inference, in both where the class's code can tell them apart. "train" or "eval": export
#: and compile in that mode alone.
MODULE_MODE_SETTINGS: tuple[str, ...] = ("auto", TRAIN, EVAL)


def module_mode_problem(value: object) -> str | None:
    """Why ``value`` is not a ``module-mode`` setting, if it is not."""
    if value in MODULE_MODE_SETTINGS:
        return None
    return f"must be one of {', '.join(repr(mode) for mode in MODULE_MODE_SETTINGS)}"
