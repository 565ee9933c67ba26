"""No import cycle among the modules of ``fxcore`` and ``fx_lsp``: each layer can be read, and
tested, from the bottom up.

Imports are read from the source with ``ast``, every one of them: at module level, inside
functions (deferred to break a cycle at run time is still a cycle in the design), and under
``if TYPE_CHECKING`` (a type that needs the other module is a dependency on it too). Importing
a package's submodule is an edge to that submodule only: Python runs the package's
``__init__`` first, but that is the package's choice, not the importer's.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("fxcore", "fx_lsp")


def module_files(root: Path) -> dict[str, Path]:
    """The modules of ``PACKAGES`` below ``root`` by dotted name (a package by its own)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _absolute(node: ast.ImportFrom, package: str) -> str:
    """The module a ``from`` import names, its dots resolved against ``package``."""
    if not node.level:
        return node.module or ""
    base = package.split(".")[: len(package.split(".")) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


def imported_modules(name: str, path: Path, modules: set[str]) -> set[str]:
    """The modules of ``modules`` that the source of module ``name`` imports anywhere."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(node, package)
            # ``from package import name``: the submodule when there is one, else the package.
            found.update(
                f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
                for alias in node.names
            )
    return {module for module in found if module in modules and module != name}


def import_graph(root: Path) -> dict[str, set[str]]:
    files = module_files(root)
    return {name: imported_modules(name, path, set(files)) for name, path in files.items()}


def import_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` (its first module repeated at its end), or None."""
    try:
        graphlib.TopologicalSorter(graph).prepare()
    except graphlib.CycleError as error:
        return list(error.args[1])
    return None


def test_fxcore_and_fx_lsp_have_no_import_cycle() -> None:
    graph = import_graph(ROOT)
    assert "fx_lsp.server.session" in graph and "fxcore.host.engine" in graph  # the walk found them
    cycle = import_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


@pytest.mark.parametrize(
    ("sources", "cycle"),
    [
        # The shape main had: a TYPE_CHECKING import back to the module that imports it.
        ({"fx_lsp/__init__.py": "",
          "fx_lsp/server.py": "from fx_lsp import trace\n",
          "fx_lsp/trace.py": "from typing import TYPE_CHECKING\n"
                             "if TYPE_CHECKING:\n    from fx_lsp.server import Server\n"},
         {"fx_lsp.server", "fx_lsp.trace"}),
        # A function-level import, relative, through a subpackage.
        ({"fxcore/__init__.py": "",
          "fxcore/a.py": "from fxcore.sub import b\n",
          "fxcore/sub/__init__.py": "",
          "fxcore/sub/b.py": "def f():\n    from .. import a\n"},
         {"fxcore.a", "fxcore.sub.b"}),
        # Submodules of one package importing each other's siblings, no cycle.
        ({"fxcore/__init__.py": "from fxcore import a\n",
          "fxcore/a.py": "from fxcore.b import x\nimport fxcore.c\n",
          "fxcore/b.py": "from . import c\n",
          "fxcore/c.py": "import os\n"},
         None),
    ],
)
def test_the_walk_finds_cycles(tmp_path: Path, sources: dict[str, str],
                               cycle: set[str] | None) -> None:
    for relative, text in sources.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text)
    found = import_cycle(import_graph(tmp_path))
    assert (set(found) if found else None) == cycle
