"""Failures that may only follow from how a capture recovered from an earlier one."""

from __future__ import annotations

import ast
import os

from fxcore.model.results import Failure
from fxcore.worker.source.locate import SourceIndex

#: Failure kind -> how the message names it. Captures recover from these by taking a branch
#: (torch.fx's control flow; torch.export's data-dependent conditions, guessed True first)
#: or running a loop body once.
RECOVERED_KINDS = {
    "control-flow": "control-flow failure",
    "iteration": "iteration failure",
    "export-data-dependent": "data-dependent condition",
}


def mark_consequences(failures: list[Failure], sources: SourceIndex) -> None:
    """Flag failures that run only because recovery took a branch or a loop body.

    Recovery from a control-flow failure (or a data-dependent condition under export) takes
    one branch; from an iteration failure it runs the loop body once with a stand-in
    element. A later failure inside that branch or body may disappear once the first is
    fixed, so its message says so.
    """
    for index, failure in enumerate(failures):
        if failure.kind not in RECOVERED_KINDS:
            continue
        tree = sources.tree(failure.path)
        if tree is None:
            continue
        body_lines: tuple[int, int] | None = None
        for node in ast.walk(tree):
            if isinstance(node, (ast.If, ast.While, ast.For, ast.AsyncFor)):
                test = node.test if isinstance(node, (ast.If, ast.While)) else node.iter
                if test.lineno == failure.line:
                    body_lines = (node.body[0].lineno, node.end_lineno or node.lineno)
                    break
        if body_lines is None:
            continue
        for later in failures[index + 1:]:
            if later.path == failure.path and body_lines[0] <= later.line <= body_lines[1] \
                    and not later.message.startswith("(May be a consequence"):
                later.possible_consequence = True
                later.message = (
                    f"(May be a consequence of the {RECOVERED_KINDS[failure.kind]} at line "
                    f"{failure.line}, which tracing recovered from.) {later.message}"
                )


def places_of(failures: list[Failure], path: str) -> str:
    """``the failure at line 12`` or ``the failures at lines 12, 30, ops.py:7``: where
    ``failures`` are, their file named when it is not ``path``."""
    places = list(dict.fromkeys(
        str(failure.line) if failure.path == path
        else f"{os.path.basename(failure.path)}:{failure.line}" for failure in failures))
    noun = "failure" if len(failures) == 1 else "failures"
    return f"the {noun} at line{'s' * (len(places) > 1)} {', '.join(places)}"
