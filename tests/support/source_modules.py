"""Test files run a corpus or a written file's code in the test process as an import would:
``load_module`` executes the file as a module of the given name, registered in
``sys.modules`` (dynamo finds a function's globals by its module's name), anew each call;
``corpus_module`` loads a corpus file once per process."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType


def load_module(path: Path | str, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def corpus_module(path: Path | str, name: str) -> ModuleType:
    """The module ``name`` of ``path``, loaded on first use in this process."""
    return sys.modules.get(name) or load_module(path, name)
