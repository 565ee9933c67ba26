"""A quick fix, planned but not computed yet (``Fix``), and what planning one needs: the text of
a file, its workspace root, and where whole-file parses run (``Run``). The planners
(``fix_plan`` for every code, ``pt2_plan`` for export's and compile's) return them."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from fxcore.model.results import ModuleResult
from fxcore.workspace.file_access import TextOf

T = TypeVar("T")

#: ``run(function, *args)``: ``function(*args)``, wherever it is computed.
Run = Callable[..., Any]


def run_here(function: Callable[..., T], *args: Any) -> T:
    """Compute in this process, uncached (the command line, tests)."""
    return function(*args)


#: The workspace root of a file (its ``pyproject.toml`` takes the project-level fixes).
RootOf = Callable[[str], str]


@dataclass
class Fix:
    title: str
    path: str
    #: The fixed text of ``path`` from its current text ("" when the file does not exist yet).
    transform: Callable[[str], str]
    preferred: bool = False
    #: Safe fixes change neither what the code does when run nor what a traced graph computes:
    #: a leaf module, ``torch.fx.wrap``, ``torch.sym_int``. ``fx-lsp check --fix`` applies
    #: only these unless given ``--unsafe-fixes``.
    safe: bool = True
    #: (line, column) the edit is made at, for edits located by position (which must be
    #: applied before edits that move lines); None for edits located by name.
    position: tuple[int, int] | None = None
    #: An import the edit's new code needs, added by name once the edit is made: after
    #: every edit located by position, when several are made in one pass.
    import_edit: Callable[[str], str] | None = None

    def texts(self, text_of: TextOf, run: Run = run_here) -> tuple[str | None, str]:
        """(current text or None, fixed text): the expensive part, done on resolve."""
        old = text_of(self.path)
        new = run(self.transform, old or "")
        if self.import_edit is not None and new != (old or ""):
            new = run(self.import_edit, new)
        return old, new


def pyproject(module: ModuleResult, root_of: RootOf) -> str:
    """The ``pyproject.toml`` whose ``[tool.fx-lsp]`` configures ``module``."""
    return os.path.join(root_of(module.path), "pyproject.toml")
