"""Whether fx-lsp's compile mode agrees with a real ``torch.compile`` run, per wrapper class.

The real side is a row of ``compile_ground_truth.py``; fx-lsp's side is the class's module of
``fx-lsp check --mode compile --output-format json`` run in the workspace folder. A graph
break on either side is ``(path, line, code)`` of its innermost frame (fx-lsp's FX501, a type
outside PyTorch's registry, has code ``None`` as on the real side).

- ``verdict``: both say ``breaks``, both ``whole`` or both ``error``;
- ``first``: the first break is the same, or for a compile error the error's first line
  and its innermost user frame;
- ``exact``: the same set of breaks.

A class fx-lsp compiled in train and in eval mode has a real row per mode (its
``module_mode``), compared with the breaks fx-lsp's verdict says that mode meets: those of
both modes and those marked with it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from compile_ground_truth import WORKSPACE, display_path

Break = tuple[str, int, "str | None"]


@dataclass(frozen=True)
class Agreement:
    """One class's real and fx-lsp verdicts and breaks, and whether they agree."""

    key: str
    real_verdict: str
    lsp_verdict: str
    real: list[Break]
    lsp: list[Break]
    first: bool
    real_error: str = ""
    lsp_error: str = ""
    #: Graphs each run compiled (informational: the verdict is the breaks').
    real_graphs: int = 0
    lsp_graphs: int | None = None
    #: The ``nn.Module`` mode both runs were in.
    module_mode: str = "train"

    @property
    def verdict(self) -> bool:
        return self.real_verdict == self.lsp_verdict

    @property
    def agrees(self) -> bool:
        """The issue's criterion: the same verdict and the same first line."""
        return self.verdict and self.first

    @property
    def exact(self) -> bool:
        return self.verdict and set(self.real) == set(self.lsp)


def class_key(path: str, cls: str) -> str:
    return f"{Path(path).name}:{cls}"


def _abs(path: str) -> str:
    return path if os.path.isabs(path) else str(WORKSPACE / path)


def _innermost(failure: dict) -> tuple[str, int]:
    """(display path, line) of a JSON failure's innermost frame."""
    frame = failure["frames"][-1] if failure.get("frames") else failure
    path = frame["path"]
    if not path.startswith("<site-packages>"):
        path = display_path(_abs(path))
    return path, frame["line"]


def _chain(failure: dict) -> list[tuple[str, int]]:
    """(display path, line) of each frame of a JSON failure's call chain."""
    return [_innermost({"path": frame["path"], "line": frame["line"]})
            for frame in failure.get("frames") or [failure]]


def lsp_side(module: dict, mode: str | None = None
             ) -> tuple[str, list[Break], str, list[tuple[str, int]]]:
    """fx-lsp's verdict, breaks (in its order), error message and the frames where the real
    error may have been raised, of one JSON module: an FX502's innermost frame (dynamo's
    stack of the user's code), or any frame of an FX504's chain (the error of the module's
    eager run on fx-lsp's inputs, whose chain goes on into torch's layers). With ``mode``,
    what the verdict says that ``nn.Module`` mode met."""
    breaks: list[Break] = []
    error, error_frames = "", []
    for failure in module.get("failures", []):
        if mode is not None and failure.get("module_mode") not in (None, mode):
            continue
        code = failure["code"]
        if code == "FX502":
            error, error_frames = failure["message"], [_innermost(failure)]
            continue
        if code == "FX504":
            error, error_frames = failure["message"], _chain(failure)
            continue
        if not (code.startswith("GB") or code == "FX501"):
            continue
        breaks.append((*_innermost(failure), None if code == "FX501" else code))
    if module.get("status") == "not-traced" and not breaks and not error:
        return "not-checked", [], "", []
    return ("error" if error else "breaks" if breaks else "whole"), breaks, error, error_frames


#: How FX504 (fx-lsp's inputs or instance do not fit) words the error the module raised
#: eagerly: "What fx-lsp chose does not fit the class: <error> on the inputs ...".
_NOT_FITTING = re.compile(r"^What fx-lsp chose does not fit the class: (?P<error>.*?) on the "
                          r"(?:inputs fx-lsp inferred|instance )", re.DOTALL)


def _same_error(error: dict, lsp_error: str) -> bool:
    """fx-lsp's FX502 (or FX504) names the real error: its first line, or, where dynamo
    wrapped an operation's own error, that error's words, which the real error's text
    quotes."""
    first_line = error.get("message", "")
    if first_line and first_line.split(":")[0] in lsp_error:
        return True
    not_fitting = _NOT_FITTING.match(lsp_error)
    detail = not_fitting["error"] if not_fitting else \
        lsp_error.removeprefix("torch.compile failed: ").split(" (fx-lsp: ")[0]
    words = detail.split(": ", 1)[-1]
    return bool(words) and words in error.get("text", "")


def compare(truth: dict, module: dict | None) -> Agreement:
    """One class: the real row against fx-lsp's module (None: fx-lsp has no such class)."""
    real = [(b["path"], b["line"], b["code"]) for b in truth["breaks"]]
    real_error = (truth.get("error") or {}).get("message", "")
    key = class_key(truth["path"], truth["class"])
    real_graphs = truth.get("graph_count", 0)
    if module is None:
        return Agreement(key, truth["verdict"], "missing", real, [], False, real_error,
                         real_graphs=real_graphs)
    mode = truth.get("module_mode", "train")
    verdict, lsp, lsp_error, lsp_error_frames = lsp_side(module, mode)
    if truth["verdict"] == "error":
        # The same error (its first line) raised at the same line, when the real run says
        # where.
        error = truth["error"]
        first = _same_error(error, lsp_error) and (
            "line" not in error or (error["path"], error["line"]) in lsp_error_frames)
    else:
        first = (real[:1] == lsp[:1])
    return Agreement(key, truth["verdict"], verdict, real, lsp, first, real_error, lsp_error,
                     real_graphs, (module.get("graph_counts") or {}).get(
                         mode, module.get("graph_count")), mode)


def agreements(truth: dict, report: dict) -> list[Agreement]:
    by_key = {class_key(m["path"], m["class"]): m for m in report["modules"]
              if m.get("mode", "compile") == "compile"}
    return [compare(row, by_key.get(class_key(row["path"], row["class"])))
            for row in truth["modules"]]
