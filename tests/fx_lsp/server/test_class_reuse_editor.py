"""A save that changes no class's code keeps every mode's verdicts: a real server, real files;
the class is not even built again, and its diagnostics move with it."""

from __future__ import annotations

import pathlib

import pytest

from lsp_support import new_project, session


def model(marks: pathlib.Path) -> str:
    return ("from torch import nn\n\n\n"
            "class Counted(nn.Module):\n"
            "    def __init__(self) -> None:\n"
            "        super().__init__()\n"
            f"        open({str(marks)!r}, 'a').write('built\\n')\n"
            "        self.unused = nn.Linear(2, 2)\n\n"
            "    def forward(self, x):\n"
            "        return x * len(x)\n")


@pytest.mark.slow
async def test_a_save_keeps_the_verdicts_of_unchanged_classes(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "user-cache"))
    workspace = new_project(tmp_path)
    marks = tmp_path / "built"
    models = workspace / "models.py"
    text = model(marks)
    models.write_text(text)
    async with session(workspace, options={"modes": ["fx", "export"]}) as client:
        uri = client.open(models)
        first = await client.settled_diagnostics(uri, version=1, timeout=240)
        found = {(d.source, str(d.code), d.range.start.line) for d in first}
        assert {source for source, _, _ in found} == {"fx-lsp", "fx-lsp (export)"}
        built = marks.read_text()
        edited = "# edit 1\n\n" + text + "_EDIT_NUMBER = 1\n"
        models.write_text(edited)
        mark = len(client.published)
        version = client.replace_text(uri, edited)
        client.save(uri)
        after = await client.settled_diagnostics(uri, version=version, after=mark, timeout=240)
        assert {(d.source, str(d.code), d.range.start.line) for d in after} == \
            {(source, code, line + 2) for source, code, line in found}
        assert marks.read_text() == built  # neither mode built the class again
