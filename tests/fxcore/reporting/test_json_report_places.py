"""A failure in the JSON report points to its diagnostic by place and code (``"reported":
true``) only where no other diagnostic shares them: two classes calling one helper can fail at
its line with the same code and different messages, and a reader then gave both classes the
first class's message."""

from __future__ import annotations

import json
from pathlib import Path

from fx_lsp.cli.output_formats.json_report import parse_report

from cli_support import fx_lsp

#: Both classes fail at the helper's ``view`` (FX300 in fx, FX406 in export), with messages
#: that name their own input sizes: 64 elements for Small, 96 for Wide.
SHARED_HELPER = """import torch
from torch import nn


def helper(x):
    return x.view(5, 7)


class Small(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return helper(self.lin(x))


class Wide(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 6)

    def forward(self, x):
        return helper(self.lin(x))
"""


def test_failures_sharing_a_place_and_code_keep_their_own_messages(tmp_path: Path) -> None:
    (tmp_path / "models.py").write_text(SHARED_HELPER)
    completed = fx_lsp("check", "--no-cache", "--output-format", "json", "--mode", "fx,export",
                       ".", cwd=tmp_path)
    raw = json.loads(completed.stdout)
    at_helper = [(problem["code"], problem["classes"]) for problem in raw["diagnostics"]
                 if (problem["line"], problem["column"]) == (6, 12)]
    assert sorted(at_helper) == [("FX300", ["Small"]), ("FX300", ["Wide"]),
                                 ("FX406", ["Small"]), ("FX406", ["Wide"])]
    report = parse_report(completed.stdout)
    sizes = {"Small": "input of size 64", "Wide": "input of size 96"}
    seen = 0
    for module in report["modules"]:
        for failure in [*module["failures"], *module["shape_errors"]]:
            if failure["line"] == 6:
                assert sizes[module["class"]] in failure["message"], (module["class"], failure)
                seen += 1
    assert seen == 4
