"""Why a class of a ``fx-lsp check --output-format json`` report got no verdict in a mode, as
one of a few causes a user can act on, and the optional package a class's import needs.

The library coverage benchmark counts the classes without a verdict by cause (constructor
arguments, example inputs, "does not fit", time-out, ...) and leaves out of its 5% target the
classes whose code needs an optional package that is not installed: that is the user's
environment, not fx-lsp's choice.
Such a class is found by the message of its failure or note: Python's ``ModuleNotFoundError``
("No module named 'X'") or a library's own lazy optional import error (MONAI's
``OptionalImportError``: "import X (No module named 'X')", "required package `X` is not
installed"), wherever the report carries it (FX100 import failure, FX101 constructor, a
constructor rejection or an input's error in the not-traced note, FX102/FX199: the note is the
module's ``reason``, the failures' messages are the report's diagnostics).
"""

from __future__ import annotations

import ast
import os
import re
from typing import Any

#: Messages that name a package the class's code imports and that is not installed.
MISSING_PACKAGE_PATTERNS = (
    re.compile(r"No module named '([\w.]+)'"),
    re.compile(r"required package `([\w.-]+)` is not installed"),
    re.compile(r"OptionalImportError: (?:from ([\w.]+) import|import ([\w.]+))"),
    # An ImportError of the library's own words (MONAI's Hyena blocks: "HyenaND operators
    # require the optional 'nvsubquadratic' package").
    re.compile(r"ImportError: .*?\boptional '([\w.-]+)' package"),
)
CONSTRUCTOR_ARGUMENTS = "constructor arguments"
EXAMPLE_INPUTS = "example inputs"
DOES_NOT_FIT = "does not fit"
TIME_OUT = "time-out or worker crash"
IMPORT_FAILED = "import failed"
OPTIONAL_PACKAGE = "optional package missing"
#: A constructor that fetches pretrained weights by default (segmentation-models-pytorch's
#: ``encoder_weights="imagenet"``) fails here, where nothing can be downloaded.
PRETRAINED_DOWNLOAD = "constructor downloads weights"
DOWNLOAD = re.compile(r"the Hub|Internet connection|urlopen|HTTPError|URLError|download",
                      re.IGNORECASE)
#: A constructor that calls a function another installed package no longer has (nnAudio's
#: CFP: ``scipy.signal.blackmanharris``, gone from SciPy 1.13): no arguments build it here.
#: Counted within the share, under its own cause.
MISSING_API = re.compile(r"module '(([\w]+)[\w.]*)' has no attribute '(\w+)'")
#: How that cause begins ("installed scipy lacks scipy.signal.blackmanharris").
LACKS_API = "installed "


def diagnostic_messages(report: dict[str, Any]) -> dict[tuple[str, str, str], list[str]]:
    """The report's diagnostic messages by (mode, path, class): a module's failures carry
    their codes and places, the diagnostics their messages (FX100's and FX101's exception)."""
    found: dict[tuple[str, str, str], list[str]] = {}
    for diagnostic in report["diagnostics"]:
        for name in diagnostic.get("classes") or []:
            found.setdefault((diagnostic.get("mode") or "fx", diagnostic["path"], name),
                             []).append(diagnostic["message"])
    return found


def missing_package(texts: list[str]) -> str | None:
    """The top-level name of the package the class's code needs and cannot import, or None."""
    for text in texts:
        for pattern in MISSING_PACKAGE_PATTERNS:
            found = pattern.search(text)
            if found:
                return next(group for group in found.groups() if group).split(".")[0]
    return None


def no_verdict_cause(module: dict[str, Any], diagnostics: list[str]) -> str:
    """The cause of one mode's missing verdict, from its status, first failure and note and
    the messages of its diagnostics (``diagnostic_messages``): only for a module without a
    verdict, since a captured class's message may well name a module."""
    reason = module.get("reason") or ""
    package = missing_package([reason, *diagnostics])
    if package:
        return f"{OPTIONAL_PACKAGE}: {package}"
    if module["status"] == "failed":
        code = module["failures"][0]["code"]
        if code == "FX100":
            return IMPORT_FAILED
        if code == "FX101" and any(DOWNLOAD.search(text) for text in diagnostics):
            return PRETRAINED_DOWNLOAD
        missing_api = next(filter(None, map(MISSING_API.search, diagnostics)), None)
        if code == "FX101" and missing_api:
            return f"{LACKS_API}{missing_api[2]} lacks {missing_api[1]}.{missing_api[3]}"
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


def classes_with_forward(path: str) -> list[str]:
    """The classes of a file that define ``forward``, read with ``ast`` (the file does not
    import, so its classes are not in the report)."""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    return [node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef) and any(
        isinstance(item, ast.FunctionDef) and item.name == "forward" for item in node.body)]


def unimported_files(report: dict[str, Any], root: str) -> list[tuple[str, list[str], str | None]]:
    """Files whose import failed (FX100 with no class): the report lists none of their classes,
    so they are counted here: (path, classes with a forward, the missing package or None)."""
    return [(diagnostic["path"],
             classes_with_forward(os.path.join(root, diagnostic["path"])),
             missing_package([diagnostic["message"]]))
            for diagnostic in report["diagnostics"]
            if diagnostic["code"] == "FX100" and not diagnostic.get("classes")]
