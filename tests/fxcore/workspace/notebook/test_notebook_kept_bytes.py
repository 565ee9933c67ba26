"""A notebook's fix keeps the bytes it does not change, inside its cells too: a cell written
with Windows line ends keeps them on every line, and a notebook whose JSON starts with a
UTF-8 byte order mark, on disk or as an editor's buffer, is read and fixed with it. Through
the real CLI and engine on the notebook workspace ``tests/workspaces/notebooks``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from fxcore.host.engine import Engine
from fxcore.model.job_spec import TraceJob

from cli_support import fx_lsp
from engine_support import REPO_ROOT, check_job

NOTEBOOKS = REPO_ROOT / "tests" / "workspaces" / "notebooks"
BOM = b"\xef\xbb\xbf"


def windows_notebook(folder: Path) -> tuple[Path, bytes]:
    """models.ipynb with every cell line and every line of its JSON ending in CRLF; its
    bytes."""
    shutil.copytree(NOTEBOOKS, folder)
    notebook = folder / "models.ipynb"
    data = json.loads(notebook.read_text(encoding="utf-8"))
    for cell in data["cells"]:
        if isinstance(cell["source"], list):
            cell["source"] = [line.removesuffix("\n") + "\r\n" if line.endswith("\n") else line
                              for line in cell["source"]]
    text = json.dumps(data, indent=1, ensure_ascii=False) + "\n"
    raw = text.replace("\n", "\r\n").encode()
    notebook.write_bytes(raw)
    return notebook, raw


def fixed_cells(before: bytes, after: bytes) -> list[tuple[list[str], list[str]]]:
    """(source before, source after) of each cell the fix changed."""
    old = json.loads(before.removeprefix(BOM))["cells"]
    new = json.loads(after.removeprefix(BOM))["cells"]
    assert len(old) == len(new)
    return [(first["source"], second["source"])
            for first, second in zip(old, new, strict=True) if first != second]


def test_a_fixed_cell_keeps_its_windows_line_ends(tmp_path: Path) -> None:
    notebook, before = windows_notebook(tmp_path / "notebooks")
    done = fx_lsp("check", "--no-cache", "--fix", "models.ipynb", cwd=notebook.parent)
    assert "FX002: Wrap len for tracing" in done.stderr
    after = notebook.read_bytes()
    [(old, new)] = fixed_cells(before, after)
    # The fix's lines are added at the cell's end, each ending as the cell's lines do, and
    # the cell's last line, which had none, takes its neighbours' end.
    assert "".join(new).startswith("".join(old) + "\r\n")
    assert all(line.endswith("\r\n") for line in new[:-1])
    assert new[-1] == 'torch.fx.wrap("len")'
    # The JSON's own lines too: no bare LF anywhere.
    assert after.count(b"\n") == after.count(b"\r\n")


def test_a_notebook_with_a_byte_order_mark_is_fixed_with_it(tmp_path: Path) -> None:
    notebook, raw = windows_notebook(tmp_path / "notebooks")
    notebook.write_bytes(BOM + raw)
    done = fx_lsp("check", "--no-cache", "--fix", "models.ipynb", cwd=notebook.parent)
    assert "FX002: Wrap len for tracing" in done.stderr
    after = notebook.read_bytes()
    assert after.startswith(BOM + b"{")
    [(_old, new)] = fixed_cells(raw, after)
    assert new[-1] == 'torch.fx.wrap("len")'


def test_an_editor_buffer_with_a_byte_order_mark_is_the_notebook(engine: Engine,
                                                                 tmp_path: Path) -> None:
    notebook, raw = windows_notebook(tmp_path / "notebooks")
    # The buffer holds the file's bytes as decoded, its mark included; on disk, no notebook.
    buffer = (BOM + raw).decode("utf-8")
    notebook.write_text("{}", encoding="utf-8")
    result = check_job(engine, TraceJob(path=str(notebook), workspace_root=str(notebook.parent),
                                        overlays={str(notebook): buffer}))
    assert result.errors == []
    verdicts = {module.class_name: module.status for module in result.modules}
    assert verdicts["MeanPool"] == "failed" and verdicts["Fine"] == "traceable"
