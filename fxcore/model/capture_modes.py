"""The names of the capture modes as the host knows them, without importing torch or worker
code: the built-in modes, and those ``FX_LSP_EXTRA_CAPTURES`` adds.

``FX_LSP_EXTRA_CAPTURES="plain=pkg.mod:PlainCapture,other=pkg.other:Other"`` registers more
capture modes (a test and extension seam): the host learns their names from it, and workers
(``fxcore.worker.capture.modes``) import each class from an installed module, before any
workspace folder is importable.
"""

from __future__ import annotations

import importlib.util
import os

#: The modes ``fxcore.worker.capture.modes.CAPTURES`` registers itself, in their order.
BUILTIN_MODES: tuple[str, ...] = ("fx", "export", "compile", "onnx")
#: The mode of a class's verdict where only one is shown (graph, inlay hints, code).
DEFAULT_MODE = "fx"
EXTRA_CAPTURES_VARIABLE = "FX_LSP_EXTRA_CAPTURES"
#: The packages a built-in mode needs beyond torch, and the extra that installs them.
MODE_PACKAGES: dict[str, tuple[tuple[str, ...], str]] = {
    "onnx": (("onnx", "onnxscript"), "fx-lsp[onnx]"),
}


def extra_captures() -> dict[str, str]:
    """Mode name -> ``module:Class`` of each capture mode ``FX_LSP_EXTRA_CAPTURES`` adds."""
    found: dict[str, str] = {}
    for entry in os.environ.get(EXTRA_CAPTURES_VARIABLE, "").split(","):
        name, _, import_path = entry.strip().partition("=")
        if name and import_path:
            found[name.strip()] = import_path.strip()
    return found


def known_modes() -> tuple[str, ...]:
    """Every capture mode a worker can run, in registration order."""
    return (*BUILTIN_MODES, *(name for name in extra_captures() if name not in BUILTIN_MODES))


def modes_problem(modes: object) -> str | None:
    """Why ``modes`` is not a non-empty list of known capture mode names, if it is not."""
    known = known_modes()
    if not (isinstance(modes, (list, tuple)) and modes
            and all(isinstance(mode, str) for mode in modes)):
        return f"must be a non-empty list of capture modes ({', '.join(known)})"
    unknown = [mode for mode in modes if mode not in known]
    if unknown:
        return (f"unknown capture mode{'s' if len(unknown) > 1 else ''} "
                f"{', '.join(repr(mode) for mode in unknown)} (known: {', '.join(known)})")
    return None


def ordered_modes(modes: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """``modes`` without repeats, ``fx`` first (its verdict comes first, as without modes)."""
    unique = tuple(dict.fromkeys(modes))
    return tuple(sorted(unique, key=lambda mode: mode != DEFAULT_MODE))


def _installed(package: str) -> bool:
    """Whether ``package`` can be found on this Python's path, without importing it (the
    workers are forks of this process and import what it finds)."""
    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False


def missing_packages_reason(mode: str) -> str | None:
    """Why ``mode`` cannot run here (a package of its extra is not installed), if so."""
    packages, extra = MODE_PACKAGES.get(mode, ((), ""))
    absent = [package for package in packages if not _installed(package)]
    if not absent:
        return None
    return (f"the {mode} capture mode needs {' and '.join(absent)}, which "
            f"{'is' if len(absent) == 1 else 'are'} not installed: pip install '{extra}'")


def available_modes(modes: tuple[str, ...]) -> tuple[tuple[str, ...], list[str]]:
    """``modes`` without those whose packages are missing, and one line per mode left out
    (said once, where the modes are configured, rather than on every class); the default
    mode where none is left."""
    problems = []
    kept = []
    for mode in modes:
        reason = missing_packages_reason(mode)
        if reason is None:
            kept.append(mode)
        else:
            problems.append(f"{reason}; checked without it")
    return (tuple(kept) or (DEFAULT_MODE,)), problems
