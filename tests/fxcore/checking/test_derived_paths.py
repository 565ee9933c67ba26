"""A run that keeps nothing for later (``fx-lsp check --no-cache``: ``Pipeline.check`` without
a cache) traces a root's submodules only for the classes of the files it reports
(``TraceJob.derived_paths``): a verdict for another file's class would be thrown away. The
classes of files it reports still get the verdict of the instance the root built."""

from __future__ import annotations

import textwrap
from pathlib import Path

from fxcore.checking.pipeline import Pipeline
from fxcore.host.engine import Engine
from fxcore.model.job_spec import EngineConfig, TraceJob
from fxcore.reporting.report import Selection

BLOCK = """
from torch import nn


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.lin = nn.Linear(width, width)

    def forward(self, x):
        return self.lin(x).relu()
"""

NET = """
from torch import nn

from block import Block


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block(8)

    def forward(self, x):
        return self.block(x) * 2
"""


def checked(engine: Engine, root: Path, names: list[str]) -> dict[str, list[str]]:
    """Per file checked, the classes its result holds derived verdicts for."""
    (root / "block.py").write_text(textwrap.dedent(BLOCK), encoding="utf-8")
    (root / "net.py").write_text(textwrap.dedent(NET), encoding="utf-8")
    pipeline = Pipeline(engine, None)
    try:
        run = pipeline.check(
            [TraceJob(path=str(root / name), workspace_root=str(root),
                      config=EngineConfig(modes=("fx",))) for name in names],
            lambda path: Path(path).read_text(encoding="utf-8"),
            lambda path: Selection(root=str(root)))
    finally:
        pipeline.close()
    derived = {Path(result.path).name: [module.class_name for module in result.derived_modules]
               for result in run.results}
    if "block.py" in names:
        [block] = [module for result in run.results for module in result.modules
                   if module.class_name == "Block"]
        assert block.arguments is not None and block.arguments.origin == "parent"
    return derived


def test_no_verdict_is_traced_for_a_class_of_a_file_the_run_does_not_report(
        engine: Engine, tmp_path: Path) -> None:
    assert checked(engine, tmp_path, ["net.py"]) == {"net.py": []}


def test_a_class_of_a_file_the_run_reports_gets_its_parents_instance(
        engine: Engine, tmp_path: Path) -> None:
    assert checked(engine, tmp_path, ["net.py", "block.py"])["net.py"] == ["Block"]
