"""``fxcore.workspace.notebook``: which code of a notebook's cells makes its checked module, the map
between the module's lines and the cells', and edits of the module put back into the JSON."""

from __future__ import annotations

import json

import pytest

from fxcore.workspace.notebook.cells import CellPosition, NotebookCell, NotebookCells
from fxcore.workspace.notebook.json_edits import NotebookEditError, edit_notebook_json
from fxcore.workspace.notebook.module_builder import build_notebook_module, notebook_module_of_json


def module_of(*sources: str, kinds: tuple[str, ...] = ()) -> str:
    cells = tuple(NotebookCell(source, kinds[index] if index < len(kinds) else "code")
                  for index, source in enumerate(sources))
    return build_notebook_module(NotebookCells(cells)).text


def test_definitions_are_kept_and_running_code_is_left_out() -> None:
    text = module_of(
        "import torch\nfrom torch import nn\nfrom functools import partial",
        "HIDDEN = 8\nSIZES = (HIDDEN, 2 * HIDDEN)\nNAME = f'net{HIDDEN}'\nact = lambda x: x\n"
        "norm = partial(nn.LayerNorm, eps=1e-6)\nconfig = dict(dim=HIDDEN)\n"
        "layer = nn.Linear(HIDDEN, HIDDEN)",
        "class Config:\n    dim = 4\n\ncfg = Config()\n\n@torch.no_grad()\ndef helper(x):\n"
        "    return x",
        "try:\n    import apex\nexcept ImportError:\n    apex = None",
        "torch.fx.wrap('len')",
    )
    assert text.splitlines() == [
        "import torch", "from torch import nn", "from functools import partial",
        "HIDDEN = 8", "SIZES = (HIDDEN, 2 * HIDDEN)", "NAME = f'net{HIDDEN}'",
        "act = lambda x: x", "norm = partial(nn.LayerNorm, eps=1e-6)",
        "config = dict(dim=HIDDEN)", "layer = nn.Linear(HIDDEN, HIDDEN)",
        "class Config:", "    dim = 4", "cfg = Config()",
        "@torch.no_grad()", "def helper(x):", "    return x",
        "try:", "    import apex", "except ImportError:", "    apex = None",
        "torch.fx.wrap('len')",
    ]


@pytest.mark.parametrize("source", [
    "print('training')",
    "data = load_data('train.csv')",  # a call of a function, not of a class
    "df = pd.read_csv('train.csv')",
    "weights = torch.load('model.pt')",
    "model = Net().to('cuda')",
    "for epoch in range(3):\n    train()",
    "if torch.cuda.is_available():\n    device = 'cuda'",
    "with open('log.txt', 'w') as log:\n    log.write('x')",
    "result = await fetch()",
    "x = missing_name",
    "import os; os.system('ls')",  # one line, two statements: not kept either
])
def test_code_that_runs_is_left_out(source: str) -> None:
    assert module_of("import torch\nimport pandas as pd", source) \
        == "import torch\nimport pandas as pd\n"


def test_ipython_syntax_is_left_out() -> None:
    cells = NotebookCells((
        NotebookCell("%matplotlib inline\nimport torch\n!pip install timm\nfiles = !ls\n"
                     "torch?\nHIDDEN = 4"),
        NotebookCell("%%time\nimport numpy\nclass Hidden:\n    pass"),
        NotebookCell("def broken(:\n    pass"),
        NotebookCell("# Title", "markdown"),
        NotebookCell("class Net:\n    pass"),
    ))
    module = build_notebook_module(cells)
    assert module.text == "import torch\nHIDDEN = 4\nclass Net:\n    pass\n"
    assert module.line_map == [(0, 2), (0, 6), (4, 1), (4, 2)]
    reasons = {(code.start.cell, code.start.line): code.reason for code in module.dropped}
    assert reasons == {(0, 1): "magic", (0, 3): "shell", (0, 4): "shell", (0, 5): "magic",
                       (1, 1): "cell magic", (2, 1): "syntax error"}
    assert next(code for code in module.dropped if code.start == CellPosition(0, 4, 1)).names \
        == ("files",)
    assert module.dropped_definition("Hidden") is not None


def test_positions_map_both_ways() -> None:
    cells = NotebookCells((
        NotebookCell("# Notes", "markdown"),
        NotebookCell("import torch\nprint(torch)\n\nHIDDEN = 8"),
        NotebookCell("data = load()\nclass Net:\n    size = HIDDEN"),
    ))
    module = build_notebook_module(cells)
    assert module.text.splitlines() == ["import torch", "HIDDEN = 8", "class Net:",
                                        "    size = HIDDEN"]
    assert module.to_cell_position(2, 1) == CellPosition(1, 4, 1)
    assert module.to_cell_position(4, 12) == CellPosition(2, 3, 12)
    assert module.to_cell_position(4, 12).cell_number == 3
    assert module.to_module_position(2, 2, 7) == (3, 7)
    assert module.to_module_position(1, 2, 1) is None  # print(torch): left out
    # The line after the module: after the last kept line (where an appended edit goes).
    assert module.to_cell_position(5, 1) == CellPosition(2, 4, 1)
    assert module.to_cell_position(6, 1) is None
    explanation = module.describe_dropped("data")
    assert explanation is not None and "`data` is defined in cell 3, line 1" in explanation


def test_other_languages_have_no_module() -> None:
    raw = json.dumps({"cells": [{"cell_type": "code", "source": "x <- 1"}],
                      "metadata": {"language_info": {"name": "R"}}})
    module = notebook_module_of_json(raw)
    assert module is not None and module.text == ""
    assert notebook_module_of_json("{not json") is None
    assert notebook_module_of_json('{"cells": 3}') is None


def test_cells_round_trip_through_their_json() -> None:
    cells = NotebookCells((NotebookCell("import torch", "code", "a1"),
                           NotebookCell("text", "markdown", "a2")))
    again = NotebookCells.from_json(cells.to_json())
    assert again == cells


def _notebook(sources: list[object], indent: int = 1) -> str:
    return json.dumps({
        "cells": [{"cell_type": "code", "execution_count": None, "metadata": {"tags": []},
                   "outputs": [{"output_type": "stream", "name": "stdout", "text": ["ok\n"]}],
                   "source": source} for source in sources],
        "metadata": {"language_info": {"name": "python"}}, "nbformat": 4,
        "nbformat_minor": 5}, indent=indent, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("indent", [1, 2, 4])
def test_an_edit_goes_into_its_cell_in_the_shape_the_source_had(indent: int) -> None:
    raw = _notebook([["import torch\n", "%matplotlib inline\n", "x = 'é'"],
                     "class Net:\n    size = len('x')",
                     ["for i in range(3):\n", "    pass"]], indent)
    module = notebook_module_of_json(raw)
    assert module is not None
    new_text = module.text.replace("import torch\n", "import torch\nimport torch.fx\n") \
        .replace("len('x')", "1")
    edited = edit_notebook_json(raw, new_text)
    before, after = json.loads(raw), json.loads(edited)
    assert after["cells"][0]["source"] == ["import torch\n", "import torch.fx\n",
                                           "%matplotlib inline\n", "x = 'é'"]
    assert after["cells"][1]["source"] == "class Net:\n    size = 1"
    assert after["cells"][2] == before["cells"][2]
    assert {key: value for key, value in after["cells"][0].items() if key != "source"} \
        == {key: value for key, value in before["cells"][0].items() if key != "source"}
    # Nothing but the two sources moved: the file is as json.dumps lays it out, as before.
    assert edited == json.dumps(after, indent=indent, ensure_ascii=False) + "\n"


def test_a_source_list_on_one_line_stays_on_one_line() -> None:
    raw = '{"cells": [{"cell_type": "code", "source": ["A = 1\\n", "B = 2"]}], "metadata": {}}'
    module = notebook_module_of_json(raw)
    assert module is not None
    edited = edit_notebook_json(raw, module.text.replace("B = 2", "B = 3"))
    assert edited == '{"cells": [{"cell_type": "code", "source": ["A = 1\\n", "B = 3"]}], ' \
        '"metadata": {}}'


def test_edits_that_do_not_fit_the_cells_are_refused() -> None:
    raw = _notebook([["A = 1\n", "print(A)\n", "B = 2"]])
    module = notebook_module_of_json(raw)
    assert module is not None and module.text == "A = 1\nB = 2\n"
    # One replacement over two lines that print(A) stands between in the cell.
    with pytest.raises(NotebookEditError):
        edit_notebook_json(raw, "A = 10\nB = 20\n")


def test_a_decorator_goes_into_the_cell_of_the_def_it_decorates() -> None:
    raw = _notebook([["import torch\n", "import torch.fx"],
                     ["def helper(x):\n", "    return len(x)"]])
    module = notebook_module_of_json(raw)
    assert module is not None
    new_text = module.text.replace("def helper", "@torch.fx.wrap\ndef helper")
    after = json.loads(edit_notebook_json(raw, new_text))
    assert after["cells"][0]["source"] == ["import torch\n", "import torch.fx"]
    assert after["cells"][1]["source"] == ["@torch.fx.wrap\n", "def helper(x):\n",
                                           "    return len(x)"]
    # A statement of its own after the last line of a cell stays in that cell.
    wrapped = module.text.replace("import torch.fx\n", "import torch.fx\ntorch.fx.wrap('len')\n")
    after = json.loads(edit_notebook_json(raw, wrapped))
    assert after["cells"][0]["source"] == ["import torch\n", "import torch.fx\n",
                                           "torch.fx.wrap('len')"]
