"""Which torch fx-lsp runs with: the one place that says which versions are supported and
tested, and what the CLI and the server say at start-up about the installed one.

The capture modes hook torch internals (dynamo's graph-break registry, export's
specialization reports...) that change between releases: each hook is feature-detected in
the worker (``fxcore/worker/capture/<mode>/``), and every series from ``MINIMUM_SERIES`` to
``TESTED_SERIES`` is tested (scripts/test-torch-matrix.sh). An older torch lacks hooks the
verdicts depend on, so it is refused before any worker starts rather than giving wrong
verdicts; a newer one runs, with one line saying it is untested.

The version comes from the installed distribution's metadata, not from ``import torch``: the
CLI and the server never import torch (it takes over a second), only their workers do."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import re
from dataclasses import dataclass
from pathlib import Path

#: The oldest torch release series fx-lsp runs with (``torch>=2.10`` in pyproject.toml).
MINIMUM_SERIES = (2, 10)
#: The newest series the tests run on (every series from ``MINIMUM_SERIES`` to it is tested:
#: scripts/test-torch-matrix.sh); newer ones run, untested.
TESTED_SERIES = (2, 15)
_SERIES = re.compile(r"(\d+)\.(\d+)")
_VERSION_ASSIGNMENT = re.compile(r"^__version__\s*=\s*['\"]([^'\"]+)['\"]", re.M)


def _dotted(series: tuple[int, int]) -> str:
    return f"{series[0]}.{series[1]}"


@dataclass(frozen=True)
class TorchSupport:
    #: The installed torch's version string (``2.13.0+cpu``), None when there is none.
    found: str | None
    #: Why fx-lsp does not trace with this torch (one line), None when it can.
    refusal: str | None = None
    #: One line saying this torch is newer than any tested, None when it is tested.
    untested: str | None = None


def installed_torch_version() -> str | None:
    """The version of the torch this Python would import, None when there is none."""
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        pass
    # A torch without distribution metadata (a source tree on the path): the version its
    # build wrote into torch/version.py, read as text (finding a package imports nothing).
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        return None
    version_file = Path(spec.origin).with_name("version.py")
    try:
        match = _VERSION_ASSIGNMENT.search(version_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None
    return match[1] if match else None


def torch_support(found: str | None) -> TorchSupport:
    """What fx-lsp makes of torch version ``found`` (None: no torch installed)."""
    needs = f"fx-lsp needs torch >= {_dotted(MINIMUM_SERIES)}"
    if found is None:
        return TorchSupport(None, refusal=f"{needs}, and this Python has no torch: install "
                            f"it with `pip install 'torch>={_dotted(MINIMUM_SERIES)}'`")
    match = _SERIES.match(found)
    series = (int(match[1]), int(match[2])) if match else None
    if series is not None and series < MINIMUM_SERIES:
        return TorchSupport(found, refusal=(
            f"{needs} (found {found}): the capture hooks it relies on are missing or differ in "
            f"older releases; upgrade with `pip install 'torch>={_dotted(MINIMUM_SERIES)}'`"))
    if series is None or series > TESTED_SERIES:
        return TorchSupport(found, untested=(
            f"fx-lsp is tested with torch {_dotted(MINIMUM_SERIES)} to "
            f"{_dotted(TESTED_SERIES)}, not {found}: it runs, "
            "and the torch internals its capture modes hook are feature-detected (a missing "
            "one is reported as such), but verdicts may differ from a tested release"))
    return TorchSupport(found)


def installed_torch_support() -> TorchSupport:
    return torch_support(installed_torch_version())
