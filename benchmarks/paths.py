"""Folders of this checkout that the benchmarks read or put on ``sys.path``."""

from __future__ import annotations

import os
import sys

BENCHMARKS = os.path.dirname(os.path.abspath(__file__))
REPOSITORY = os.path.dirname(BENCHMARKS)
#: Plain-PyTorch models (a Llama-2-7B-sized decoder, a ResNet-50) several suites build.
MODELS = os.path.join(BENCHMARKS, "models")
EXAMPLES = os.path.join(REPOSITORY, "examples")
#: The documentation site's benchmark pages, which hold the blocks the suite runs write.
PAGES = os.path.join(REPOSITORY, "docs", "benchmarks")
#: The third-party fidelity tests' helpers (export_compare, compile_agreement, ...).
THIRDPARTY = os.path.join(REPOSITORY, "tests", "thirdparty")
#: The torchvision shim the fidelity-test workspace imports first (its CUDA-built wheel cannot
#: load next to the CPU torch); workspaces built from real libraries import a copy of it.
TORCHVISION_SHIM = os.path.join(THIRDPARTY, "workspace", "tpmodels", "_shim.py")


def use_thirdparty_helpers() -> None:
    """Make the third-party tests' helper modules importable: the fidelity benchmarks compare
    with real torch exactly as those tests do, so they share the comparison code."""
    if THIRDPARTY not in sys.path:
        sys.path.insert(0, THIRDPARTY)


def child_environment(*extra: str, repository: str = REPOSITORY) -> dict[str, str]:
    """This environment with ``repository`` (this checkout, unless a benchmark measures
    another) and ``extra`` folders first on PYTHONPATH: a child then runs that checkout's
    fx-lsp (and this one's ``benchmarks``) whatever its working folder, a workspace, also when
    it runs a benchmark's file as a script."""
    environment = dict(os.environ)
    environment["PYTHONPATH"] = os.pathsep.join(
        [repository, *extra, *filter(None, [environment.get("PYTHONPATH")])])
    return environment
