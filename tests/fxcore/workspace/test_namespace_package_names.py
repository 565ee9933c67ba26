"""The import name of a file in a folder without ``__init__.py``: a namespace package's module
imports under its dotted name from the folder above the package, as
``python -c "import pkg.a"`` run there imports it; a folder of scripts keeps importing each
file by its stem from the folder itself. Python is the ground truth of every case: the name
and folder fx-lsp picks are those a plain ``import`` works with."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fxcore.model.job_spec import EngineConfig, TraceJob
from fxcore.workspace.paths import find_workspace_root, import_location, source_text

from engine_support import check_job

HELPER = "class Helper:\n    pass\n"

#: (files, the file located, the folder it imports from, its module name)
CASES = {
    "from-import": ({"pkg/a.py": "from pkg.b import Helper\n", "pkg/b.py": HELPER},
                    "pkg/a.py", ".", "pkg.a"),
    "import-as": ({"pkg/a.py": "import pkg.b as blocks\nH = blocks.Helper\n",
                   "pkg/b.py": HELPER},
                  "pkg/a.py", ".", "pkg.a"),
    # b names no package of its own, but loads as pkg.b beside a: one folder, one package.
    "sibling-of-a-namespace-module": ({"pkg/a.py": "from pkg.b import Helper\n",
                                       "pkg/b.py": HELPER},
                                      "pkg/b.py", ".", "pkg.b"),
    "relative-import": ({"pkg/a.py": "from .b import Helper\n", "pkg/b.py": HELPER},
                        "pkg/a.py", ".", "pkg.a"),
    "nested-namespace": ({"lib/ns/sub/a.py": "from ns.sub.b import Helper\n",
                          "lib/ns/sub/b.py": HELPER},
                         "lib/ns/sub/a.py", "lib", "ns.sub.a"),
    "regular-package-in-a-namespace": ({"ns/pkg/__init__.py": "",
                                        "ns/pkg/a.py": "from ns.layers import Helper\n",
                                        "ns/layers.py": HELPER},
                                       "ns/pkg/a.py", ".", "ns.pkg.a"),
    # The name of the namespace is only in a module the file's package imports.
    "imported-module-names-the-namespace": ({"ns/pkg/__init__.py": "",
                                             "ns/pkg/a.py": "from .sub.c import Helper\n",
                                             "ns/pkg/sub/__init__.py": "",
                                             "ns/pkg/sub/c.py": "from ns.layers import Helper\n",
                                             "ns/layers.py": HELPER},
                                            "ns/pkg/a.py", ".", "ns.pkg.a"),
    "script-importing-a-sibling": ({"scripts/run.py": "from blocks import Helper\n",
                                    "scripts/blocks.py": HELPER},
                                   "scripts/run.py", "scripts", "run"),
    # ``models`` is the sibling models.py, as for `python train.py`; `import models.train`
    # from the folder above finds no Net in the namespace package.
    "script-importing-a-sibling-named-as-its-folder": (
        {"models/train.py": "from models import Net\n", "models/models.py": "Net = 1\n"},
        "models/train.py", "models", "train"),
    # ``json`` is the standard library's, which a folder named json above never replaces.
    "script-in-a-folder-named-as-an-installed-module": (
        {"json/load.py": "import json\nX = json.dumps(1)\n"},
        "json/load.py", "json", "load"),
}


def write(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def python_imports(folder: Path, module: str) -> subprocess.CompletedProcess[str]:
    """``python -c "import MODULE"`` run in ``folder``: the ground truth."""
    return subprocess.run([sys.executable, "-c", f"import {module}"], cwd=folder,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("files, target, entry, module", CASES.values(), ids=list(CASES))
def test_the_import_name_is_the_one_python_imports(tmp_path: Path, files: dict[str, str],
                                                    target: str, entry: str,
                                                    module: str) -> None:
    write(tmp_path, files)
    imported = python_imports(tmp_path / entry, module)
    assert imported.returncode == 0, imported.stderr
    location = import_location(str(tmp_path / target))
    assert (location.sys_path_entry, location.module_name) == (
        str((tmp_path / entry).resolve()), module)


def test_a_script_folder_s_modules_are_not_a_namespace_package(tmp_path: Path) -> None:
    """Python agrees: the script imports its sibling by bare name and fails as models.train."""
    write(tmp_path, CASES["script-importing-a-sibling-named-as-its-folder"][0])
    assert python_imports(tmp_path, "models.train").returncode != 0


def test_an_unsaved_buffer_s_imports_decide(tmp_path: Path) -> None:
    """The editor's text, not the file on disk, says which package the file is in."""
    write(tmp_path, {"pkg/a.py": "H = 1\n", "pkg/b.py": HELPER})
    path = str((tmp_path / "pkg" / "a.py").resolve())
    buffers = {path: "from pkg.b import Helper\n"}
    assert import_location(path).module_name == "a"
    location = import_location(path, functools.partial(source_text, overlays=buffers))
    assert location.module_name == "pkg.a"


NET = '''
import json
import os
import torch
from {helper_import}

with open(os.path.join(os.path.dirname(__file__), "..", "seen-name.json"), "w") as probe:
    json.dump(__name__, probe)


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.helper = Helper()

    def forward(self, x):
        return self.helper(x) * 2
'''
TORCH_HELPER = '''
import torch


class Helper(torch.nn.Module):
    def forward(self, x):
        return x + 1
'''


@pytest.mark.parametrize("helper_import", ["pkg.b import Helper", ".b import Helper"])
def test_the_engine_imports_a_namespace_package_s_module_by_its_dotted_name(
        tmp_path: Path, engine, helper_import: str) -> None:
    """Through the engine, with the root a caller finds: imported (no FX100) as ``pkg.a``,
    its ``__name__`` the one Python gives it."""
    write(tmp_path, {"pkg/a.py": NET.format(helper_import=helper_import),
                     "pkg/b.py": TORCH_HELPER})
    imported = python_imports(tmp_path, "pkg.a")
    assert imported.returncode == 0, imported.stderr
    assert json.loads((tmp_path / "seen-name.json").read_text()) == "pkg.a"
    (tmp_path / "seen-name.json").unlink()
    path = str(tmp_path / "pkg" / "a.py")
    result = check_job(engine, TraceJob(path=path, workspace_root=find_workspace_root(path),
                                        config=EngineConfig()))
    assert not result.errors, result.errors
    (net,) = [module for module in result.modules if module.class_name == "Net"]
    assert (net.qualified_name, net.status) == ("pkg.a:Net", "traceable"), net.failures
    assert json.loads((tmp_path / "seen-name.json").read_text()) == "pkg.a"
