"""``fx-lsp check`` on a library laid out as a namespace package (no ``__init__.py``, no project
file above): its modules import their own package, as they do once installed or from the
folder above, so none is reported as unimportable (FX100); each is judged under its dotted
name. A folder of scripts importing each other by bare name still is checked as scripts.
``python -c "import MODULE"`` run in the folder checked is the ground truth of each case
(tests/fxcore/workspace/test_namespace_package_names.py runs it on the same layouts without torch,
whose import a subprocess here would pay for each case); one case here runs it on the
files checked."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from cli_support import fx_lsp

HELPER = '''
import torch


class Helper(torch.nn.Module):
    def forward(self, x):
        return x + 1
'''
NET = '''
import torch
{imports}


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.helper = {helper}()

    def forward(self, x):
        return self.helper(x) * 2
'''

#: (files, the folder checked and Python run in, what is checked, Net's qualified name)
CASES = {
    "from-import": ({"pkg/a.py": NET.format(imports="from pkg.b import Helper",
                                            helper="Helper"),
                     "pkg/b.py": HELPER}, ".", "pkg", "pkg.a:Net"),
    "import-as": ({"pkg/a.py": NET.format(imports="import pkg.b as blocks",
                                          helper="blocks.Helper"),
                   "pkg/b.py": HELPER}, ".", "pkg/a.py", "pkg.a:Net"),
    "import-dotted": ({"pkg/a.py": NET.format(imports="import pkg.b", helper="pkg.b.Helper"),
                       "pkg/b.py": HELPER}, ".", "pkg/a.py", "pkg.a:Net"),
    "nested-namespace": ({"ns/sub/a.py": NET.format(imports="from ns.sub.b import Helper",
                                                    helper="Helper"),
                          "ns/sub/b.py": HELPER}, ".", "ns/sub/a.py", "ns.sub.a:Net"),
    "regular-package-in-a-namespace": (
        {"ns/pkg/__init__.py": "",
         "ns/pkg/a.py": NET.format(imports="from ns.layers import Helper", helper="Helper"),
         "ns/layers.py": HELPER}, ".", "ns/pkg/a.py", "ns.pkg.a:Net"),
    "script-importing-a-sibling": (
        {"scripts/run.py": NET.format(imports="from blocks import Helper", helper="Helper"),
         "scripts/blocks.py": HELPER}, "scripts", "run.py", "run:Net"),
}


def write(root: Path, files: dict[str, str]) -> None:
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


@pytest.mark.parametrize("files, folder, checked, qualified", CASES.values(), ids=list(CASES))
def test_a_namespace_package_s_modules_import(tmp_path: Path, files: dict[str, str],
                                              folder: str, checked: str,
                                              qualified: str) -> None:
    write(tmp_path, files)
    cwd = tmp_path / folder
    completed = fx_lsp("check", "--no-cache", "--output-format", "json", checked, cwd=cwd)
    report = json.loads(completed.stdout)
    codes = [d["code"] for d in report["diagnostics"]]
    assert "FX100" not in codes, report["diagnostics"]
    statuses = {module["qualified_name"]: module["status"] for module in report["modules"]}
    assert statuses.get(qualified) == "traceable", statuses


def test_checked_from_inside_the_package_folder(tmp_path: Path) -> None:
    """The library's folder itself as the working folder (as a user opening it checks it):
    the root found is that folder, and its modules still import their package, as Python
    imports them from the folder above."""
    write(tmp_path, CASES["from-import"][0])
    plain = subprocess.run([sys.executable, "-c", "import pkg.a"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
    assert plain.returncode == 0, plain.stderr
    completed = fx_lsp("check", "--no-cache", ".", cwd=tmp_path / "pkg")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    assert "FX100" not in completed.stdout
    assert "Checked 2 files: 2 modules traced, 2 traceable" in completed.stdout, \
        completed.stdout
