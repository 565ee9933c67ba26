"""The inputs stage's decision is one value the pipeline passes on (``InputsDecision``):
only the pipeline keeps it on a target (``CaptureTarget.inputs_decision``); stages, captures
and readers take it as an argument."""

from __future__ import annotations

import ast
from pathlib import Path

FXCORE = Path(__file__).parents[2] / "fxcore"
#: Where the held decision may be named: its field, and the pipeline that writes and reads it.
ALLOWED = ("worker/pipeline/", "worker/job/capture_target.py")


def _touches(path: Path) -> bool:
    """Whether ``path``'s code reads or writes an attribute ``inputs_decision``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return any(isinstance(node, ast.Attribute) and node.attr == "inputs_decision"
               for node in ast.walk(tree))


def test_only_the_pipeline_touches_the_held_decision() -> None:
    touching = sorted(str(path.relative_to(FXCORE)) for path in FXCORE.rglob("*.py")
                      if _touches(path) and not str(path.relative_to(FXCORE)).startswith(ALLOWED))
    assert touching == []


def test_the_pipeline_does_hold_it() -> None:
    """The check above finds the field where it is used, so it can fail."""
    assert _touches(FXCORE / "worker" / "pipeline" / "capturing.py")
