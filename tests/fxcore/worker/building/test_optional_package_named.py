"""A class whose module imports an optional package inside ``try`` that is not installed (or
whose constructor imports it) is reported with the package's name, not only as needing
constructor arguments, and the library benchmark counts it apart
(``benchmarks/fidelity/no_verdict_causes.py``)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

from cli_support import fx_lsp
from engine_support import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT))
from benchmarks.fidelity.no_verdict_causes import (
    OPTIONAL_PACKAGE,
    diagnostic_messages,
    no_verdict_cause,
)

WORKSPACE = '''
import torch
from torch import nn

try:
    from peft_missing_pkg import LoraConfig, get_peft_model
    PEFT_AVAILABLE = True
except ImportError:
    LoraConfig = get_peft_model = None
    PEFT_AVAILABLE = False


class LoraWrapped(nn.Module):
    def __init__(self, dim, rank=8):
        super().__init__()
        self.base = nn.Linear(dim, dim)
        self.model = get_peft_model(self.base, LoraConfig(r=rank))

    def forward(self, x):
        return self.model(x)


class Flagged(nn.Module):
    def __init__(self, dim=8):
        super().__init__()
        if not PEFT_AVAILABLE:
            raise RuntimeError("install the extra to use this model")
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return self.fc(x)


class Lazy(nn.Module):
    def __init__(self, dim):
        super().__init__()
        import another_missing_pkg
        self.fc = another_missing_pkg.Layer(dim)

    def forward(self, x):
        return self.fc(x)


class Plain(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return self.fc(x)
'''

#: The package each class's note must name; None: no package is involved.
NEEDED = {"LoraWrapped": "peft_missing_pkg", "Flagged": "peft_missing_pkg",
          "Lazy": "another_missing_pkg", "Plain": None}


def test_the_missing_optional_package_is_named_and_counted_apart(tmp_path: Path) -> None:
    (tmp_path / "wrapped.py").write_text(textwrap.dedent(WORKSPACE))
    completed = fx_lsp("check", "--no-cache", "--mode", "fx", "--output-format", "json",
                       "wrapped.py", cwd=tmp_path)
    report = json.loads(completed.stdout)
    modules = {module["class"]: module for module in report["modules"]}
    by_class = diagnostic_messages(report)
    for name, package in NEEDED.items():
        module = modules[name]
        if package is None:
            assert module["status"] == "traceable", module
            continue
        messages = by_class.get(("fx", module["path"], name), [])
        said = f"It needs the optional package '{package}', which is not installed here"
        assert said in (module["reason"] or "") or any(said in m for m in messages), module
        assert no_verdict_cause(module, messages) == f"{OPTIONAL_PACKAGE}: {package}"
