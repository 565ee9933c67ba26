"""A real git repository of many model classes: the installed timm's ``layers`` package
(158 classes in 70 files for timm 1.0.31), copied as the package ``tlayers`` into a new git
repository. ``benchmarks/speed/graph_diff.py --timm-layers`` times ``fx-lsp diff`` on it, and
``tests/thirdparty/test_adoption_real_library.py`` adopts fx-lsp on it (baseline,
``--add-noqa``, ``fx-lsp diff``).

The package is copied as it is, its ``__init__`` (which imports every module) included, with
its ``__pycache__`` (``copytree`` keeps modification times, so the bytecode stays valid and a
worker does not compile the files again). Two files are added: a copy of the third-party
tests' torchvision shim, imported first by ``__init__`` (``timm.layers`` imports
``torchvision.ops``, whose CUDA-built wheel cannot load next to the CPU torch), and a
``pyproject.toml`` with a longer time-out (a job's first deadline covers importing the whole
package, slow on a loaded 2-core machine). ``graph_change`` is a commit that adds a graph
break to one class and fixes another's FX failure, touching nothing else.
"""

from __future__ import annotations

import importlib.util
import py_compile
import shutil
import subprocess
from pathlib import Path

from benchmarks.paths import TORCHVISION_SHIM

PACKAGE = "tlayers"
SHIM_MODULE = "_fxlsp_torchvision_shim"
TIMEOUT_SECONDS = 120

#: A file's edit: (file, class, text before, text after).
Edit = tuple[str, str, str, str]
_SPACE_TO_DEPTH = ("        N, C, H, W = x.size()\n"
                   "        x = x.view(N, C, H // self.bs, self.bs, W // self.bs, self.bs)")
#: A data-dependent ``if`` at the top of SpaceToDepth.forward: a graph break in compile
#: mode, an FX failure.
BREAK: Edit = ("space_to_depth.py", "SpaceToDepth",
               "    def forward(self, x):\n" + _SPACE_TO_DEPTH,
               "    def forward(self, x):\n        if x.abs().mean() > 1.0:\n"
               "            x = x / 2\n" + _SPACE_TO_DEPTH)
#: ClassifierHead.forward without its ``pre_logits`` flag, a traced bool whose ``if`` FX
#: cannot take: its FX failure fixed.
FIX: Edit = ("classifier.py", "ClassifierHead",
             "    def forward(self, x, pre_logits: bool = False):\n"
             "        x = self.global_pool(x)\n        x = self.drop(x)\n"
             "        if pre_logits:\n            return self.flatten(x)\n",
             "    def forward(self, x):\n        x = self.global_pool(x)\n"
             "        x = self.drop(x)\n")
_IF = "        if "


class LayersNotFound(Exception):
    """timm is not installed, or its layers differ from the ones ``graph_change`` edits."""


def git(root: Path, *arguments: str) -> str:
    return subprocess.run(["git", "-C", str(root), "-c", "user.name=fx-lsp",
                           "-c", "user.email=fx-lsp@localhost", *arguments],
                          check=True, capture_output=True, text=True).stdout


def installed_layers() -> Path:
    spec = importlib.util.find_spec("timm")  # locates without importing (which needs the shim)
    if spec is None or not spec.submodule_search_locations:
        raise LayersNotFound("timm is not installed: run bash scripts/install-thirdparty.sh")
    return Path(next(iter(spec.submodule_search_locations))) / "layers"


def build(root: Path) -> Path:
    """The repository in ``root`` (a new folder), its one commit the copied package."""
    package = root / PACKAGE
    shutil.copytree(installed_layers(), package)
    shutil.copyfile(TORCHVISION_SHIM, package / f"{SHIM_MODULE}.py")
    init = package / "__init__.py"
    init.write_text(f"from . import {SHIM_MODULE}  # noqa: F401  (before torchvision)\n"
                    + init.read_text(encoding="utf-8"), encoding="utf-8")
    for path in (init, package / f"{SHIM_MODULE}.py"):
        py_compile.compile(str(path), doraise=True,
                           invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "{PACKAGE}"\nversion = "0"\n\n'
        f"[tool.fx-lsp]\ntimeout = {TIMEOUT_SECONDS}\n")
    (root / ".gitignore").write_text("__pycache__/\n")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "timm's layers")
    return root


def line_of(path: Path, text: str) -> int:
    """The 1-based line where ``text`` starts in ``path``."""
    return path.read_text(encoding="utf-8").split(text)[0].count("\n") + 1


def graph_change(root: Path, edits: tuple[Edit, ...] = (BREAK, FIX)) -> dict[str, int]:
    """Commit ``edits``; returns, by class, the line of the ``if`` each adds or removes
    (SpaceToDepth's new one after the commit, ClassifierHead's before it)."""
    lines = {}
    for name, class_name, before, after in edits:
        path = root / PACKAGE / name
        text = path.read_text(encoding="utf-8")
        if text.count(before) != 1:
            raise LayersNotFound(f"{PACKAGE}/{name} of this timm has no {class_name}.forward "
                                 "as graph_change expects")
        # The def's line is the same before and after; the ``if`` is in one of the two.
        block = after if _IF in after else before
        lines[class_name] = line_of(path, before) + block[:block.index(_IF)].count("\n")
        path.write_text(text.replace(before, after), encoding="utf-8")
    git(root, "commit", "-qam", f"Changed {', '.join(lines)}")
    return lines
