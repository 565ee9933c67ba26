"""Plain ``torch.fx.symbolic_trace`` of a workspace's class in the test process, built as
fx-lsp built it: the reference fx-lsp's fx verdicts are compared with."""

from __future__ import annotations

import dataclasses
import importlib
import sys
from pathlib import Path

import torch
from torch import fx

from fxcore.model.results import Arguments, Frame
from fxcore.worker.building.construction import resolve
from fxcore.worker.running.seeding import seed_generators
from fxcore.worker.source.locate import (
    SourceIndex,
    innermost_workspace_frame,
    to_frame,
    traceback_positions,
)
from fxcore.workspace.config import load_config
from fxcore.workspace.module_config import module_config_for
from fxcore.workspace.paths import import_location

#: Argument sources whose values fx-lsp found rather than read from configuration.
FOUND_ORIGINS = {"call-site", "config-class", "guessed"}


def plain_trace(path: Path, root: Path, class_name: str, arguments: Arguments | None = None,
                device: str = "meta") -> tuple[BaseException | None, str]:
    """Build a class as fx-lsp did (its configuration, or the arguments fx-lsp found, given
    as source), on ``device`` (fx-lsp's is meta), and trace it with plain torch.fx in this
    process: the error it raised, or the generated code."""
    location = import_location(str(path))
    sys.path[:0] = [str(root), location.sys_path_entry]
    try:
        module = importlib.import_module(location.module_name)
        config, _ = load_config(str(root))
        module_config = module_config_for(config, location.module_name, class_name)
        if arguments is not None and arguments.origin in FOUND_ORIGINS:
            namespace = vars(module)
            module_config = dataclasses.replace(
                module_config, args=[eval(text, namespace) for text in arguments.args],
                kwargs={name: eval(text, namespace) for name, text in arguments.kwargs.items()})
        seed_generators()  # as fx-lsp's worker seeds: the same draws, the same branches
        with torch.device(device):
            if module_config.factory:
                model = resolve(module_config.factory)(*module_config.args,
                                                       **module_config.kwargs)
            else:
                model = getattr(module, class_name)(*module_config.args,
                                                    **module_config.kwargs)
        seed_generators()
        try:
            return None, fx.symbolic_trace(model).code
        except Exception as error:
            return error, ""
    finally:
        del sys.path[:2]
        for name in [n for n in sys.modules if n == location.module_name.split(".")[0]
                     or n.startswith(location.module_name.split(".")[0] + ".")]:
            del sys.modules[name]


def plain_failure_frame(error: BaseException, root: Path) -> Frame | None:
    """The workspace's innermost frame where plain tracing raised ``error``."""
    frames = [to_frame(p, SourceIndex()) for p in traceback_positions(error.__traceback__)]
    return innermost_workspace_frame(frames, str(root))
