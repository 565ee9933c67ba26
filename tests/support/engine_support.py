"""Helpers shared by the engine and CLI tests: temporary workspaces and source positions.

(A module of its own, not conftest.py: every test folder has a conftest.py, and pytest loads
them all under the one name ``conftest``.)
"""

from __future__ import annotations

import ast
import os
import textwrap
from pathlib import Path
from typing import Any

from fxcore.checking.pipeline import Pipeline
from fxcore.host.engine import Engine
from fxcore.model.job_spec import EngineConfig, TraceJob
from fxcore.model.results import FileResult

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = REPO_ROOT / "examples"


#: One pipeline (and so one call-site index, as in a server) per engine the tests check jobs on.
_pipelines: dict[int, Pipeline] = {}


def pipeline_of(engine: Engine) -> Pipeline:
    """The pipeline, without a cache, that ``check_job`` runs ``engine``'s jobs through."""
    pipeline = _pipelines.get(id(engine))
    if pipeline is None or pipeline.engine is not engine:
        pipeline = _pipelines[id(engine)] = Pipeline(engine)
    return pipeline


def close_pipelines() -> None:
    for pipeline in _pipelines.values():
        pipeline.close()
    _pipelines.clear()


def check_job(engine: Engine, job: TraceJob) -> FileResult:
    """``job``'s result as the command line and the server get it (``fxcore.checking``: call
    sites, builders, notebook names), on ``engine``."""
    return pipeline_of(engine).result_of(job)


class Workspace:
    """A folder with a pyproject.toml, filled with dedented source files."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "pyproject.toml").write_text("[project]\nname = 'ws'\nversion = '0'\n")

    def write(self, relative: str, text: str) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        return path

    def check(self, engine: Engine, relative: str, config: EngineConfig | None = None,
              overlays: dict[str, str] | None = None) -> FileResult:
        return check_job(engine, TraceJob(path=str(self.root / relative),
                                          workspace_root=str(self.root),
                                          config=config or EngineConfig(),
                                          overlays=overlays or {}))


def span_of(path: Path, line: int, snippet: str, occurrence: int = 1) -> tuple[int, int, int, int]:
    """(line, column, end_line, end_column) of a snippet on a line: 1-based characters."""
    text = path.read_text(encoding="utf-8").splitlines()[line - 1]
    start = -1
    for _ in range(occurrence):
        start = text.index(snippet, start + 1)
    return line, start + 1, line, start + 1 + len(snippet)


def line_of(path: Path, snippet: str) -> int:
    for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if snippet in text:
            return number
    raise AssertionError(f"{snippet!r} not in {path}")


def marked_line(path: Path, class_name: str, marker: str) -> int | None:
    """The line of top-level class ``class_name`` that ends with the comment ``marker``
    (``# FX404``), None when none does."""
    lines = path.read_text(encoding="utf-8").splitlines()
    node = next(node for node in ast.parse("\n".join(lines)).body
                if isinstance(node, ast.ClassDef) and node.name == class_name)
    marked = [number for number in range(node.lineno, (node.end_lineno or node.lineno) + 1)
              if lines[number - 1].endswith(marker)]
    assert len(marked) <= 1, (class_name, marked)
    return marked[0] if marked else None


def failure_span(failure) -> tuple[int, int, int, int]:
    return failure.line, failure.column, failure.end_line, failure.end_column


#: (kind, code, forward body, the expression that must be highlighted)
CASES = [
    ("control-flow", "FX001", "if x.sum() > 0:\n    x = x + 1", "x.sum() > 0"),
    ("control-flow", "FX001", "while x.max() > 1:\n    x = x / 2", "x.max() > 1"),
    ("control-flow", "FX001", "x = max(x.sum(), 1)", "max(x.sum(), 1)"),
    ("len", "FX002", "x = x * len(x)", "len(x)"),
    ("iteration", "FX003", "for row in x:\n    pass", "x"),
    ("iteration", "FX003", "rows = [r * 2 for r in x]", "x"),
    ("conversion", "FX004", "x = x * int(x.shape[1])", "int(x.shape[1])"),
    ("conversion", "FX004", "x = x * float(x.sum())", "float(x.sum())"),
    ("conversion", "FX004", "for i in range(x.size(0)):\n    pass", "range(x.size(0))"),
    ("mutation", "FX005", "x[0] = 1", "x[0]"),
    ("contains", "FX006", "found = 3 in x", "3 in x"),
    ("unpacking", "FX007", "x = torch.stack([*x])", "[*x]"),
    ("unpacking", "FX007", "x = torch.cat(*x)", "torch.cat(*x)"),
]


def is_running(pid: int) -> bool:
    """The process exists and is not a zombie (from /proc)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


#: A model whose import leaves a marker file: proof that a worker ran the workspace's code.
MARKING_MODEL = """\
import pathlib

import torch
from torch import nn

pathlib.Path(__file__).with_name("imported.txt").write_text("imported")


class Gate(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.linear(x)
        if y.sum() > 0:
            return y
        return -y
"""


def fake_torch_metadata(folder: Path, version: str) -> str:
    """A PYTHONPATH under which ``importlib.metadata.version("torch")`` is ``version``."""
    info = folder / f"torch-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n")
    return os.pathsep.join(filter(None, [str(folder), str(REPO_ROOT),
                                         os.environ.get("PYTHONPATH", "")]))


def onnx_exporter_or_skip() -> Any:
    """This torch's ONNX exporter pieces (``fxcore.worker.capture.onnx.exporter``), or the
    test skipped with the reason the onnx mode gives for this torch series (the matrix runs
    the onnx tests under every series: ``-rs`` lists the reasons per series)."""
    import pytest
    import torch

    from fxcore.worker.capture.onnx.exporter import exporter

    found = exporter()
    if isinstance(found, str):
        pytest.skip(f"the onnx mode cannot run on torch {torch.__version__}: {found}")
    return found


#: A file of two classes, one FX002 (``len`` of a traced value) and one traceable: the
#: workspace of the tests that compare the MCP server, the engine's API and the CLI.
USES_LEN_AND_FINE = """import torch
from torch import nn


class UsesLen(nn.Module):
    def forward(self, x):
        return x * len(x)


class Fine(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return torch.relu(self.lin(x))
"""
