"""The CI sample of a sweep over real model classes, and the switch to the whole sweep.

CI (``scripts/test.sh``) must finish within its time budget, so a test that compares fx-lsp
with real torch over many third-party classes runs a sample there: a few classes picked by
name for each kind of case the test checks, the same ones in every run. ``FX_LSP_FULL_SWEEP=1``
runs every class instead (each test's docstring says what else runs the whole sweep).

A class is left out of a file by blanking its lines (``leave_out``) rather than by deleting
them: every kept class stays at its own lines, so the lines fx-lsp and real torch report are
those of the original file.
"""

from __future__ import annotations

import ast
import os
from pathlib import Path

#: Every class, not the CI sample: ``FX_LSP_FULL_SWEEP=1``.
FULL_SWEEP = os.environ.get("FX_LSP_FULL_SWEEP") == "1"


def leave_out(path: Path, names: set[str]) -> set[str]:
    """Blank the top-level classes of ``path`` named in ``names`` (their decorators too), line
    for line; returns the names it found. Other classes (a config class the kept ones use)
    stay."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    found = set()
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef) and node.name in names:
            found.add(node.name)
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            for index in range(first - 1, node.end_lineno or node.lineno):
                lines[index] = "\n"
    path.write_text("".join(lines), encoding="utf-8")
    return found
