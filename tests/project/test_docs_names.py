"""Every module, name and file the documentation names exists: a page that names
``fxcore.worker.inputs.sources`` after the module moved sends a reader to nothing. Dotted
names of ``fxcore`` and ``fx_lsp`` resolve to a module, optionally followed by a name that
module defines; repository paths (``fxcore/...``, ``tests/...``, ``scripts/...``) exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine_support import REPO_ROOT

PAGES = sorted([REPO_ROOT / "README.md", *(REPO_ROOT / "docs").rglob("*.md")])
#: ``fxcore.host.engine.Engine.close``: a package's dotted name, maybe an attribute after it.
DOTTED = re.compile(r"(?<![\w./-])((?:fxcore|fx_lsp)(?:\.[A-Za-z_]\w*)+)")
#: ``fxcore/worker/job.py``, ``tests/project/``: a path from the repository's root.
REPO_PATH = re.compile(r"(?<![\w./-])((?:fxcore|fx_lsp|tests|benchmarks|scripts)/[\w./+-]*\w/?)")
#: Names that are not modules: loggers.
NOT_MODULES = frozenset({"fxcore.workers"})
#: Names a module gives on demand (its ``__getattr__``).
ON_DEMAND = frozenset({"fx_lsp.__version__"})


def module_file(parts: list[str]) -> Path | None:
    base = REPO_ROOT.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def defines(source: Path, name: str) -> bool:
    """Whether ``name`` is defined, assigned or imported at some level of ``source``."""
    text = source.read_text(encoding="utf-8")
    pattern = (rf"(?m)^\s*(?:(?:async\s+)?def|class)\s+{name}\b|^\s*{name}\s*[:=]"
               rf"|\bimport\b.*\b{name}\b|^\s+{name},?$|self\.{name}\s*[:=]")
    return re.search(pattern, text) is not None


def unresolved_dotted(name: str) -> bool:
    parts = name.split(".")
    for length in range(len(parts), 0, -1):
        found = module_file(parts[:length])
        if found is not None:
            if length == len(parts):
                return False
            return not defines(found, parts[length])
    return True


def unresolved_path(path: str) -> bool:
    return not (REPO_ROOT / path.rstrip("/")).exists()


def names_in(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    wrong = [name for name in sorted(set(DOTTED.findall(text)))
             if name not in NOT_MODULES | ON_DEMAND and unresolved_dotted(name)]
    for path in sorted(set(REPO_PATH.findall(text))):
        # A link relative to the page itself (docs/benchmarks/ beside docs/index.md).
        if unresolved_path(path) and not (page.parent / path).exists():
            wrong.append(path)
    return wrong


@pytest.mark.parametrize("page", PAGES, ids=lambda page: str(page.relative_to(REPO_ROOT)))
def test_every_module_and_path_a_page_names_exists(page: Path) -> None:
    assert names_in(page) == []


def test_a_moved_module_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("See `fxcore.worker.pipeline.job.Job`, `fxcore.host.engine.NoSuchThing`, "
                    "`fxcore.worker.no_such_module` and `fxcore/no_such_room/x.py`; "
                    "`fxcore.workers` logs.\n")
    assert names_in(page) == ["fxcore.host.engine.NoSuchThing", "fxcore.worker.no_such_module",
                              "fxcore/no_such_room/x.py"]
