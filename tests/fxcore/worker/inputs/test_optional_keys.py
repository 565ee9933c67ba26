"""A dict argument whose keys ``forward`` reads only where present (``if batch.get(k) is not
None``, ``if "k" in batch``): export and compile capture the class with those keys given and
left out (``inputs.from_forward.container``, ``inputs.eager_runs.key_sets``), as a user's calls come
either way; a
problem met with one set alone is reported at its line and says which set, one met with both
is reported once. Each verdict compared in the same test with real torch.export (non-strict)
and torch.compile (recording backend) on the CPU, on real tensors of each of the two sets
(``pt2_real_check.real_outcomes``)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from fx_lsp.cli.output_formats.json_report import parse_report

import cli_support
from engine_support import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT))
from benchmarks.fidelity.pt2_real_check import real_outcomes

BATCHES = '''import torch
from torch import nn


class BranchWhenMissing(nn.Module):
    def __init__(self, features: int = 6, hidden: int = 8):
        super().__init__()
        self.proj = nn.Linear(features, hidden)
        self.extra = nn.Linear(features, hidden)

    def forward(self, batch: dict[str, torch.Tensor]):
        out = self.proj(batch["values"])
        if batch.get("extra") is not None:
            out = out + self.extra(batch["extra"])
        elif out.sum() > 0:
            out = out * 2
        return out


class BranchOnPresent(nn.Module):
    def __init__(self, features: int = 6, hidden: int = 8):
        super().__init__()
        self.proj = nn.Linear(features, hidden)
        self.steps = nn.Linear(features, hidden)

    def forward(self, batch):
        out = self.proj(batch["values"])
        if "steps" in batch:
            steps = self.steps(batch["steps"])
            if steps.sum() > 0:
                out = out + steps
        return out


class BranchEitherWay(nn.Module):
    def __init__(self, features: int = 6, hidden: int = 8):
        super().__init__()
        self.proj = nn.Linear(features, hidden)
        self.mask = nn.Linear(features, hidden)

    def forward(self, batch: dict):
        out = self.proj(batch["values"])
        if out.mean() > 0:
            out = out - 1
        mask = batch.get("mask")
        if mask is not None:
            out = out * self.mask(mask)
        return out
'''

#: The key each class reads only where present.
OPTIONAL = {"BranchWhenMissing": "extra", "BranchOnPresent": "steps", "BranchEitherWay": "mask"}
#: The line of each class's data-dependent branch (``> 0:``), in the order of the classes:
#: where real torch fails.
BRANCH_LINES = dict(zip(OPTIONAL, (number for number, line in enumerate(
    BATCHES.splitlines(), start=1) if line.endswith("> 0:")), strict=True))


def _real_lines(outcome: dict) -> tuple[set[int], set[int]]:
    """The lines of ``batches.py`` where real export failed and real compile broke."""
    export = outcome["export"]
    exported = {export["workspace_frame"]["line"]} if export["verdict"] == "failed" else set()
    compiled = {entry["line"] for run in outcome["compile"] for entry in run["breaks"]
                if entry["path"].endswith("batches.py")}
    return exported, compiled


@pytest.mark.slow
def test_keys_read_only_where_present_are_captured_given_and_left_out(tmp_path: Path) -> None:
    (tmp_path / "batches.py").write_text(BATCHES)
    completed = cli_support.fx_lsp("check", "--no-cache", "--mode", "export,compile",
                                   "--output-format", "json", "batches.py", cwd=tmp_path)
    report = parse_report(completed.stdout)
    modules = {(module["class"], module["mode"]): module for module in report["modules"]}
    messages = {(diagnostic["mode"], diagnostic["classes"][0], diagnostic["line"]):
                diagnostic["message"] for diagnostic in report["diagnostics"]
                if len(diagnostic["classes"]) == 1}
    requests, sets = [], []
    for name, key in OPTIONAL.items():
        export, compile_ = modules[(name, "export")], modules[(name, "compile")]
        # The report names both sets it captured, and gives the inputs of the set that met
        # the problem.
        sets_note = re.compile(rf"with '{key}' given \((\w+): (\{{.*?\}})\); "
                               rf"with '{key}' left out \((\w+): (\{{.*?\}})\)")
        found = [match for module in (export, compile_) for note in module["capture_notes"]
                 if (match := sets_note.search(note))]
        assert len(found) == 2, (export["capture_notes"], compile_["capture_notes"])
        given, left_out = ({found[0][1]: found[0][2]}, {found[0][3]: found[0][4]})
        assert f"'{key}'" in given["batch"] and f"'{key}'" not in left_out["batch"]
        assert export["inputs"]["tensors"] in (given, left_out)
        for specs in (given, left_out):
            requests.append({"module": export, "compile": compile_, "inputs": specs})
            sets.append((name, specs is given))
    real = dict(zip(sets, real_outcomes(str(tmp_path), requests), strict=True))
    for name, key in OPTIONAL.items():
        exported_given, compiled_given = _real_lines(real[(name, True)])
        exported_left, compiled_left = _real_lines(real[(name, False)])
        # Real torch fails at the class's branch with one set or both, as written.
        assert exported_given | exported_left == compiled_given | compiled_left \
            == {BRANCH_LINES[name]}, (name, real[(name, True)], real[(name, False)])
        for mode, given_lines, left_lines in (("export", exported_given, exported_left),
                                              ("compile", compiled_given, compiled_left)):
            failures = modules[(name, mode)]["failures"]
            assert modules[(name, mode)]["status"] == "failed"
            # One problem at the branch's line, whichever set met it, reported once.
            assert [failure["line"] for failure in failures] == [BRANCH_LINES[name]], failures
            message = messages[(mode, name, BRANCH_LINES[name])]
            if given_lines and left_lines:
                assert "(only with" not in message, message
            else:
                only = "given" if given_lines else "left out"
                assert message.endswith(f"(only with '{key}' {only})"), message
