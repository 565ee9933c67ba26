"""Why a class of a ``fx-lsp check --output-format json`` report got no verdict in a mode, as
one of a few causes a user can act on, and the optional package a class's import needs.

Issue 46 counts the classes without a verdict by cause (constructor arguments, example inputs,
"does not fit", time-out, ...) and leaves out of its 5% target the classes whose code needs an
optional package that is not installed: that is the user's environment, not fx-lsp's choice.
Such a class is found by the message of its failure or note: Python's ``ModuleNotFoundError``
("No module named 'X'") or a library's own lazy optional import error (MONAI's
``OptionalImportError``: "import X (No module named 'X')", "required package `X` is not
installed"), wherever the report carries it (FX100 import failure, FX101 constructor, a
constructor rejection or an input's error in the not-traced note, FX102/FX199).
"""

from __future__ import annotations

import re
from typing import Any

#: Messages that name a package the class's code imports and that is not installed.
MISSING_PACKAGE_PATTERNS = (
    re.compile(r"No module named '([\w.]+)'"),
    re.compile(r"required package `([\w.-]+)` is not installed"),
    re.compile(r"OptionalImportError: (?:from ([\w.]+) import|import ([\w.]+))"),
)
CONSTRUCTOR_ARGUMENTS = "constructor arguments"
EXAMPLE_INPUTS = "example inputs"
DOES_NOT_FIT = "does not fit"
TIME_OUT = "time-out or worker crash"
IMPORT_FAILED = "import failed"
OPTIONAL_PACKAGE = "optional package missing"


def messages(module: dict[str, Any]) -> list[str]:
    """Every text of the module's report that can carry the cause: its note and failures."""
    texts = [module.get("reason") or ""]
    for failure in module["failures"]:
        texts += [failure.get("message") or "", failure.get("exception") or ""]
    return texts


def missing_package(module: dict[str, Any]) -> str | None:
    """The top-level name of the package the class's code needs and cannot import, or None.

    Only when the class got no verdict for that reason: a class that was captured and whose
    failure message merely mentions a module is not one."""
    for text in messages(module):
        for pattern in MISSING_PACKAGE_PATTERNS:
            found = pattern.search(text)
            if found:
                return next(group for group in found.groups() if group).split(".")[0]
    return None


def no_verdict_cause(module: dict[str, Any]) -> str:
    """The cause of one mode's missing verdict, from its status, first failure and note."""
    package = missing_package(module)
    if package:
        return f"{OPTIONAL_PACKAGE}: {package}"
    reason = module.get("reason") or ""
    if module["status"] == "failed":
        code = module["failures"][0]["code"]
        if code == "FX100":
            return IMPORT_FAILED
        if code == "FX101":
            return CONSTRUCTOR_ARGUMENTS
        if code in ("FX102", "FX199"):
            return TIME_OUT
        return f"failed before the capture ({code})"
    if any(failure.get("kind", "").endswith("does-not-fit") for failure in module["failures"]):
        return DOES_NOT_FIT
    if "constructor needs arguments" in reason or "Guessed arguments were rejected" in reason:
        return CONSTRUCTOR_ARGUMENTS
    if "no example inputs" in reason:
        return EXAMPLE_INPUTS
    if "timed out" in reason or "time budget" in reason:
        return TIME_OUT
    return "other: " + " ".join(reason.split()[:6])
