"""How the verdict of a class that its file's ``file-timeout`` did not reach is known
(``fxcore.host.unfinished_children.not_reached`` makes it): not traced, with a reason that
starts with ``NOT_REACHED``. Such a verdict depends on the machine's speed, so the results
cache does not keep it (``fxcore.host.cache``)."""

from __future__ import annotations

from fxcore.model.results import ModuleResult

NOT_REACHED = "not reached: the"


def is_not_reached(module: ModuleResult) -> bool:
    return module.status == "not-traced" and (module.reason or "").startswith(NOT_REACHED)
