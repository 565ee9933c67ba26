"""Which device a class is judged for: the ``device`` setting, whose default (``auto``)
reads the code, never the machine, so that a laptop, a GPU workstation and a CPU-only CI
runner give the same verdicts.

With ``auto`` a class is judged for a GPU (``cuda``) when its code puts tensors there or
asks CUDA: a ``"cuda"``/``"cuda:N"`` string, a ``.cuda`` attribute (``x.cuda()``,
``torch.cuda.is_available()``, ``torch.cuda.amp``), cuDNN's settings or a GPU-only attention
backend (``GPU_ATTRIBUTES``), in the class's own body or in a module-level statement that
binds a name the class uses (``DEVICE = "cuda" if torch.cuda.is_available() else "cpu"``).
Any other class is judged for the CPU. Code that runs the same on both is judged the same
either way; only the note saying which device a verdict is for differs.

The setting is the class's own (``[tool.fx-lsp.modules."pkg.mod:Class"] device``), else its
file's (``per-file-device``, the first glob that matches the path relative to the workspace
root or the file name, as ``per-file-ignores`` matches), else the workspace's ``device``.
"""

from __future__ import annotations

import ast
import fnmatch
import os
import re
import weakref
from dataclasses import dataclass

from fxcore.model.gpu_marks import GPU_ATTRIBUTES
from fxcore.model.job_spec import EngineConfig, ModuleConfig

_CUDA_STRING = re.compile(r"cuda(:\d+)?")


def _mentions_cuda(node: ast.AST) -> bool:
    for child in ast.walk(node):
        if isinstance(child, ast.Attribute) and child.attr in GPU_ATTRIBUTES:
            return True
        if isinstance(child, ast.Constant) and isinstance(child.value, str) \
                and _CUDA_STRING.fullmatch(child.value):
            return True
    return False


def _bound_names(statement: ast.stmt) -> set[str]:
    """The names a module-level statement binds (``DEVICE = ...``, ``import``s excluded)."""
    names: set[str] = set()
    targets: list[ast.expr] = []
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
        targets = [statement.target]
    elif isinstance(statement, (ast.If, ast.Try)):
        for inner in ast.iter_child_nodes(statement):
            if isinstance(inner, ast.stmt):
                names |= _bound_names(inner)
        return names
    for target in targets:
        names |= {node.id for node in ast.walk(target) if isinstance(node, ast.Name)}
    return names


@dataclass(frozen=True)
class _TopLevel:
    """What ``written_for_cuda`` reads of a module's top level, read once per tree: asked of
    every class of a file, reading it again for each made a file of thousands of classes
    quadratic."""

    #: Each top-level class by name, its first definition where a name has several.
    classes: dict[str, ast.ClassDef]
    #: The names bound by each module-level statement (no definition) that mentions CUDA.
    cuda_bindings: list[set[str]]


_TOP_LEVELS: weakref.WeakKeyDictionary[ast.Module, _TopLevel] = weakref.WeakKeyDictionary()


def _top_level(tree: ast.Module) -> _TopLevel:
    found = _TOP_LEVELS.get(tree)
    if found is None:
        classes: dict[str, ast.ClassDef] = {}
        for statement in tree.body:
            if isinstance(statement, ast.ClassDef):
                classes.setdefault(statement.name, statement)
        found = _TopLevel(classes, [
            _bound_names(statement) for statement in tree.body
            if not isinstance(statement, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and _mentions_cuda(statement)])
        _TOP_LEVELS[tree] = found
    return found


def written_for_cuda(tree: ast.Module, class_name: str) -> bool:
    """Whether the top-level class ``class_name`` of ``tree`` is written for a GPU."""
    top_level = _top_level(tree)
    definition = top_level.classes.get(class_name)
    if definition is None:
        return False
    if _mentions_cuda(definition):
        return True
    used = {node.id for node in ast.walk(definition) if isinstance(node, ast.Name)}
    return any(bound & used for bound in top_level.cuda_bindings)


def device_setting(config: EngineConfig, module_config: ModuleConfig, path: str,
                   root: str) -> str:
    """The ``device`` setting that applies to a class of ``path``."""
    if module_config.device is not None:
        return module_config.device
    relative = os.path.relpath(path, root).replace(os.sep, "/")
    return next((device for pattern, device in config.per_file_device.items()
                 if fnmatch.fnmatch(relative, pattern)
                 or fnmatch.fnmatch(os.path.basename(path), pattern)), config.device)


def judged_device(setting: str, tree: ast.Module | None, class_name: str) -> str:
    """``cpu`` or ``cuda``: the setting's device, or with ``auto`` the one the code is
    written for."""
    if setting != "auto":
        return setting
    return "cuda" if tree is not None and written_for_cuda(tree, class_name) else "cpu"
