"""``fx-lsp check`` on Jupyter notebooks, as users run it: a real subprocess over the
notebook workspace ``tests/workspaces/notebooks``, copied to a temporary folder.

The verdicts and places are checked against plain ``torch.fx.symbolic_trace`` run in this
process on the same classes, copied by hand from the cells into a ``.py`` file."""

from __future__ import annotations

import importlib
import json
import re
import shutil
import subprocess
import sys
import traceback
from pathlib import Path

import nbformat
import pytest
import torch
from torch import fx

from fx_lsp.cli.output_formats.json_report import parse_report
from fxcore.host.engine import Engine
from fxcore.model.job_spec import TraceJob
from fxcore.workspace.notebook.cells import CellPosition, NotebookCell, NotebookCells
from fxcore.workspace.notebook.module_builder import build_notebook_module

from cli_support import fx_lsp
from engine_support import REPO_ROOT, check_job

NOTEBOOKS = REPO_ROOT / "tests" / "workspaces" / "notebooks"
#: The classes of models.ipynb, each traced by plain torch.fx.
MODEL_CLASSES = ["MeanPool", "Gate", "PerRow", "Rows", "Fine", "Suppressed"]
#: The marker files training.ipynb's left-out cells would write if they ran.
MARKERS = ["ran.marker", "trained.marker", "shell.marker", "bash.marker"]


def run_cli(workspace: Path, *arguments: str, cache: bool = False
            ) -> subprocess.CompletedProcess[str]:
    options = ("check", *(() if cache else ("--no-cache",)), *arguments)
    return fx_lsp(*options, cwd=workspace)


@pytest.fixture
def notebooks(tmp_path: Path) -> Path:
    copy = tmp_path / "notebooks"
    shutil.copytree(NOTEBOOKS, copy)
    return copy


def code_cells_as_module(notebook: Path, folder: Path) -> tuple[Path, dict[int, tuple[int, int]]]:
    """The notebook's code cells before its training ones, copied into ``<folder>/copied.py``
    without their IPython lines (``%``, ``!``): the same classes as a plain file. Returns the
    file and its map from line to (cell number, line in the cell)."""
    cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
    lines: list[str] = []
    where: dict[int, tuple[int, int]] = {}
    for index, cell in enumerate(cells):
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        if source.startswith(("!", "%%")):
            break  # the training cells
        for number, line in enumerate(source.split("\n"), 1):
            if not line.lstrip().startswith(("%", "!")):
                lines.append(line)
                where[len(lines)] = (index + 1, number)
        lines.append("")
    path = folder / "copied.py"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, where


Place = tuple[str, "int | None", int, tuple[int, int]]


def plain_fx_verdicts(copied: Path, workspace: Path, where: dict[int, tuple[int, int]]
                      ) -> dict[str, list[Place] | None]:
    """Class -> None when plain torch.fx traces it, else the workspace frames of the error it
    raised, outermost first, as (file name, cell number or None, line, (column, end column)
    of what the frame ran)."""
    sys.path[:0] = [str(copied.parent), str(workspace)]
    try:
        module = importlib.import_module(copied.stem)
        verdicts: dict[str, list[Place] | None] = {}
        for name in MODEL_CLASSES:
            with torch.device("meta"):
                model = getattr(module, name)()
            try:
                fx.symbolic_trace(model)
            except Exception as error:
                frames = []
                for frame in traceback.extract_tb(error.__traceback__):
                    path = Path(frame.filename)
                    columns = ((frame.colno or 0) + 1, (frame.end_colno or 0) + 1)
                    if path == copied:
                        cell, line = where[frame.lineno]
                        frames.append(("models.ipynb", cell, line, columns))
                    elif path.parent == workspace:
                        frames.append((path.name, None, frame.lineno, columns))
                verdicts[name] = frames
            else:
                verdicts[name] = None
        return verdicts
    finally:
        del sys.path[:2]
        for name in (copied.stem, "helpers"):
            sys.modules.pop(name, None)


def test_verdicts_and_places_in_cells_agree_with_plain_fx(notebooks: Path, tmp_path: Path
                                                          ) -> None:
    copied, where = code_cells_as_module(notebooks / "models.ipynb", tmp_path)
    plain = plain_fx_verdicts(copied, notebooks, where)
    assert plain["Fine"] is None and all(plain[name] for name in MODEL_CLASSES
                                         if name != "Fine"), plain

    completed = run_cli(notebooks, "--output-format", "json", "models.ipynb")
    report = parse_report(completed.stdout)
    modules = {module["class"]: module for module in report["modules"]}
    assert set(modules) == set(MODEL_CLASSES)
    for name, frames in plain.items():
        module = modules[name]
        if frames is None:
            assert module["status"] == "traceable", module
            continue
        assert module["status"] == "failed", module
        first = module["failures"][0]
        chain = [frame for frame in first["frames"]
                 if frame["path"] in ("models.ipynb", "helpers.py")]
        # The call chain through other cells and files, ending where plain torch.fx raised
        # (its innermost workspace frame): in the same cell and line, inside what that frame
        # ran (fx-lsp marks the condition of an `if`, the traceback the statement).
        assert [(frame["path"], frame.get("cell"), frame["line"]) for frame in chain] \
            == [place[:3] for place in frames], name
        for frame, (*_, (start, end)) in zip(chain, frames, strict=True):
            assert start <= frame["column"] < end, (name, frame, start, end)
        assert (first["path"], first.get("cell"), first["line"], first["column"]) == \
            (chain[-1]["path"], chain[-1].get("cell"), chain[-1]["line"], chain[-1]["column"])
    # The chains reach across cells (PerRow -> per_row in cell 4) and files (Rows -> helpers).
    assert plain["PerRow"] is not None and plain["PerRow"][-1][:2] == ("models.ipynb", 4)
    assert plain["Rows"] is not None and plain["Rows"][-1][0] == "helpers.py"

    # Shapes and graph nodes are placed in cells too.
    assert {"path": "models.ipynb", "cell": 9, "line": 7, "shape": "float32[2, 8, 8]"} \
        in modules["Fine"]["shapes"]
    assert {(node["cell"], node["line"]) for node in modules["Fine"]["nodes"]} == {(9, 7)}
    # The suppression comment in Suppressed's cell silences its diagnostic.
    diagnosed = {(item["path"], item.get("cell"), item["line"], item["code"])
                 for item in report["diagnostics"]}
    suppressed = modules["Suppressed"]["failures"][0]
    assert ("models.ipynb", suppressed["cell"], suppressed["line"], "FX002") not in diagnosed
    assert report["summary"]["suppressed"] == 1
    mean_pool = modules["MeanPool"]["failures"][0]
    assert ("models.ipynb", 6, 3, "FX002") in diagnosed and mean_pool["cell"] == 6
    assert completed.returncode == 1, completed.stderr


def test_terminal_places_name_cells_as_ruff_does(notebooks: Path) -> None:
    concise = run_cli(notebooks, "--output-format", "concise", ".")
    lines = concise.stdout.splitlines()
    assert any(line.startswith("models.ipynb:cell 6:3:27: FX002 [MeanPool] ")
               for line in lines), lines
    assert any(line.startswith("models.ipynb:cell 4:6:16: FX002 [PerRow] ")
               for line in lines), lines
    assert any(line.startswith("helpers.py:7:12: FX002 [Rows] ") for line in lines), lines
    # Found in the folder: both notebooks and the helper file.
    assert lines[-1].startswith("Checked 3 files:"), lines

    full = run_cli(notebooks, "--output-format", "full", "models.ipynb").stdout
    # The source line shown with its number in its cell.
    assert "models.ipynb:cell 6:3:27: FX002 [MeanPool]" in full
    assert "3 |         return x.sum(0) / len(x)" in full

    github = run_cli(notebooks, "--output-format", "github", "models.ipynb").stdout
    assert "::error file=models.ipynb,title=fx-lsp (FX002)::cell 6:3:27: FX002 [MeanPool]" \
        in github

    sarif = parse_report(run_cli(notebooks, "--output-format", "sarif", "models.ipynb").stdout)
    (result,) = [item for item in sarif["runs"][0]["results"]
                 if "[MeanPool]" in item["message"]["text"]]
    assert result["message"]["text"].startswith("cell 6:3:27: FX002")
    assert result["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": "models.ipynb"}}
    assert result["properties"]["fx-lsp"] == {"cell": 6, "startLine": 3, "startColumn": 27}

    junit = run_cli(notebooks, "--output-format", "junit", "models.ipynb").stdout
    assert 'name="FX002 at cell 6, line 3, column 27"' in junit


def test_training_cells_are_never_run(notebooks: Path) -> None:
    completed = run_cli(notebooks, "--output-format", "json", "training.ipynb")
    assert [marker for marker in MARKERS if (notebooks / marker).exists()] == []
    report = parse_report(completed.stdout)
    assert report["files"][0]["errors"] == []
    modules = {module["class"]: module for module in report["modules"]}
    assert modules["TinyNet"]["status"] == "traceable"
    # A class that needs what a left-out cell computes: FX100, naming the cell.
    (scaled,) = modules["Scaled"]["failures"]
    assert scaled["code"] == "FX100"
    assert "`scale` is defined in cell 4, line 2" in scaled["message"]
    # One that needs a dataset whose file is missing: the assignment was skipped.
    (centered,) = modules["Centered"]["failures"]
    assert centered["code"] == "FX100"
    assert "`train_rows` is assigned in cell 5, line 1" in centered["message"]
    assert "FileNotFoundError" in centered["message"]
    # A constructor call a training cell writes (read, never run) gives Wide its arguments.
    assert modules["Wide"]["status"] == "traceable"
    assert modules["Wide"]["arguments"] == {"from": "call-site", "args": [],
                                            "kwargs": {"width": "16"},
                                            "site": "training.ipynb:cell 6:1"}


def test_fix_changes_only_the_fixed_cell(notebooks: Path) -> None:
    notebook = notebooks / "models.ipynb"
    before_text = notebook.read_text(encoding="utf-8")
    completed = run_cli(notebooks, "--fix", "models.ipynb")
    assert "models.ipynb:cell 6:3:27: FX002: Wrap len for tracing" in completed.stderr
    after_text = notebook.read_text(encoding="utf-8")
    nbformat.validate(nbformat.reads(after_text, as_version=4))
    before, after = parse_report(before_text), parse_report(after_text)
    assert len(after["cells"]) == len(before["cells"])
    changed = [index for index, (old, new)
               in enumerate(zip(before["cells"], after["cells"], strict=True)) if old != new]
    assert changed == [1]  # the imports cell, where torch.fx.wrap("len") goes
    assert {key: value for key, value in after["cells"][1].items() if key != "source"} \
        == {key: value for key, value in before["cells"][1].items() if key != "source"}
    # Appended after the cell's last import, as its last line (no newline, as nbformat keeps).
    assert after["cells"][1]["source"][-1] == 'torch.fx.wrap("len")'
    assert after["cells"][1]["source"][:4] == before["cells"][1]["source"][:4]
    assert {key: value for key, value in after.items() if key != "cells"} \
        == {key: value for key, value in before.items() if key != "cells"}
    # Written as nbformat writes it, like the original: no other byte of the file moved.
    assert after_text == json.dumps(after, indent=1, ensure_ascii=False) + "\n"
    assert before_text == json.dumps(before, indent=1, ensure_ascii=False) + "\n"
    # The fixed notebook traces MeanPool.
    report = parse_report(run_cli(notebooks, "--output-format", "json", "models.ipynb").stdout)
    statuses = {module["class"]: module["status"] for module in report["modules"]}
    assert statuses["MeanPool"] == "traceable"


def test_cached_until_a_checked_cell_changes(notebooks: Path) -> None:
    first = parse_report(run_cli(notebooks, "--output-format", "json", "models.ipynb",
                               cache=True).stdout)
    assert first["summary"]["cached"] == 0
    again = parse_report(run_cli(notebooks, "--output-format", "json", "models.ipynb",
                               cache=True).stdout)
    assert again["summary"]["cached"] == 1
    assert again["diagnostics"] == first["diagnostics"]
    notebook = notebooks / "models.ipynb"
    data = parse_report(notebook.read_text(encoding="utf-8"))
    # A training cell (left out of the checked module) changes: still cached.
    data["cells"][-1]["source"] = ["for epoch in range(5):\n", "    pass"]
    notebook.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    edited_training = parse_report(run_cli(notebooks, "--output-format", "json",
                                         "models.ipynb", cache=True).stdout)
    assert edited_training["summary"]["cached"] == 1
    # MeanPool's cell changes: traced again, and the fix shows.
    data["cells"][5]["source"] = ["class MeanPool(nn.Module):\n", "    def forward(self, x):\n",
                                  "        return x.sum(0) / x.size(0)"]
    notebook.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    edited_model = parse_report(run_cli(notebooks, "--output-format", "json", "models.ipynb",
                                      cache=True).stdout)
    assert edited_model["summary"]["cached"] == 0
    statuses = {module["class"]: module["status"] for module in edited_model["modules"]}
    assert statuses["MeanPool"] == "traceable"


def test_excluded_notebooks_are_not_checked(notebooks: Path) -> None:
    (notebooks / "pyproject.toml").write_text(
        '[project]\nname = "x"\nversion = "0"\n\n[tool.fx-lsp]\nexclude = ["training.ipynb"]\n',
        encoding="utf-8")
    completed = run_cli(notebooks, "--output-format", "json", ".")
    paths = {item["path"] for item in parse_report(completed.stdout)["files"]}
    assert paths == {"helpers.py", "models.ipynb"}


def test_an_editor_overlay_is_the_notebook_json(engine: Engine, tmp_path: Path) -> None:
    """The editor's cells (``NotebookCells.to_json``) replace the notebook on disk; a
    `from __future__ import annotations` cell holds for the cells after it, as in a module."""
    path = tmp_path / "scratch.ipynb"
    path.write_text(NotebookCells((NotebookCell("import torch"),)).to_json(), encoding="utf-8")
    cells = NotebookCells((
        NotebookCell("from __future__ import annotations\nimport torch\nfrom torch import nn"),
        NotebookCell("# notes", "markdown"),
        NotebookCell("class Net(nn.Module):\n    def forward(self, x: Later) -> Later:\n"
                     "        return x.sum(0) / len(x)"),
        NotebookCell("class Later:\n    pass"),
    ))
    result = check_job(engine, TraceJob(path=str(path), workspace_root=str(tmp_path),
                                        overlays={str(path): cells.to_json()}))
    assert result.errors == []
    (net,) = result.modules
    (failure,) = net.failures
    module = build_notebook_module(cells)
    assert failure.code == "FX002"
    assert module.to_cell_position(failure.line, failure.column) == CellPosition(2, 3, 27)


def test_graph_of_a_notebook_class_names_its_cells(notebooks: Path) -> None:
    """``fx-lsp graph nb.ipynb::Class``: the page's places name the cell and its line, as
    ``fx-lsp check`` does, not the module line of the notebook's file."""
    page = notebooks / "Fine.graph.html"
    done = fx_lsp("graph", "models.ipynb::Fine", "-o", str(page), "--no-cache", cwd=notebooks)
    assert done.returncode == 0, done.stderr
    data = json.loads(re.search(r"<script>window\.FX_GRAPH = (.*?);</script>",
                                page.read_text(encoding="utf-8"), re.DOTALL)
                      .group(1).replace("<\\/", "</"))
    labels = {node["name"]: node["location"]["label"] for node in data["nodes"]
              if node["location"] is not None}
    # Cell 9: `return torch.relu(self.layer(x))` is its 7th line; `x` is forward's argument.
    assert labels == {"x": "models.ipynb:cell 9:6", "layer": "models.ipynb:cell 9:7",
                      "relu": "models.ipynb:cell 9:7"}
    assert data["location"]["label"] == "models.ipynb:cell 9:1"
