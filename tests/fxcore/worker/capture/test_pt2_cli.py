"""The export and compile modes through the CLI and forked workers: what each reports by
default, where, and in which output formats."""

from __future__ import annotations

import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest

from fx_lsp.cli.output_formats.json_report import parse_report

import cli_support
from output_goldens import registry_sarif_rule

MODELS = """\
import torch
from torch import nn


class Gated(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        y = self.proj(x)
        if y.abs().mean() > 1.0:
            y = y / 2
        return y


class Built(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.proj = nn.Linear(width, width)
        self.spare = nn.Linear(width, width)

    def forward(self, x):
        return self.proj(x).relu()


def build_built() -> Built:
    return Built(width=8)
"""

PYPROJECT = """\
[tool.fx-lsp]
modes = ["fx", "export", "compile"]

[tool.fx-lsp.modules."models:Built"]
factory = "models:build_built"
"""


def fx_lsp(cwd: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return cli_support.fx_lsp(*arguments, cwd=cwd)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("pt2")
    (root / "models.py").write_text(MODELS, encoding="utf-8")
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def checked(workspace: Path) -> dict[str, Any]:
    completed = fx_lsp(workspace, "check", "--no-cache", "--output-format", "json", ".")
    assert completed.returncode == 1, completed.stderr
    return parse_report(completed.stdout)


def _problems(checked: dict[str, Any]) -> set[tuple[str, int, str]]:
    return {(d["code"], d["line"], d["mode"]) for d in checked["diagnostics"]}


def test_each_mode_reports_the_data_dependent_branch_by_default(
        checked: dict[str, Any]) -> None:
    """FX001 (fx), FX401 (export) and PyTorch's GB0170 (compile) on the same `if`: graph
    breaks are selected by default, as the FX codes are."""
    line = MODELS.splitlines().index("        if y.abs().mean() > 1.0:") + 1
    assert {("FX001", line, "fx"), ("FX401", line, "export"),
            ("GB0170", line, "compile")} <= _problems(checked)


def test_an_unused_submodule_is_one_problem_whatever_the_modes(checked: dict[str, Any]) -> None:
    unused = [d for d in checked["diagnostics"] if d["code"] == "FX200"]
    assert len(unused) == 1, unused


def test_a_factory_built_class_compiles_on_meta(checked: dict[str, Any]) -> None:
    """A factory builds on meta too: the compile inputs must be meta tensors, not CPU ones
    beside meta weights (a false FX502 'device mismatch')."""
    built = {m["mode"]: m for m in checked["modules"] if m["class"] == "Built"}
    assert set(built) == {"fx", "export", "compile"}
    assert all(m["status"] == "traceable" for m in built.values()), built


def test_the_summary_counts_classes_and_each_modes_verdicts(
        workspace: Path, checked: dict[str, Any]) -> None:
    """Two classes, three verdicts each: the summary says 2 classes, not 6 modules, and a
    class that compiles in two graphs is one with graph breaks, not a failed one."""
    counts = {"traced": 2, "traceable": 1, "failed": 1, "not_traced": 0, "not_built": 0,
              "instance_does_not_fit": 0, "with_graph_breaks": 0, "on_real_instances": 2,
              "on_guessed_arguments": 0}
    assert checked["summary"]["classes"] == 2
    assert checked["summary"]["modes"] == {"fx": counts, "export": counts,
                                           "compile": {**counts, "with_graph_breaks": 1}}
    line = fx_lsp(workspace, "check", "--output-format", "concise", ".").stdout.splitlines()[-1]
    each = "2 traced, 1 traceable, 1 failed, 0 not traced"
    compiled = "2 traced, 1 whole, 1 with graph breaks, 0 failed, 0 not traced"
    assert line == (f"Checked 1 file: 2 classes; fx: {each}; export: {each}; "
                    f"compile: {compiled}."), line


def test_pt2_call_chains_hold_the_users_frames_not_torchs(checked: dict[str, Any]) -> None:
    """The chain a diagnostic lists (related information in the editor) is the user's calls:
    none of torch.export's or dynamo's own frames between the export call and forward."""
    for module in checked["modules"]:
        for failure in module["failures"]:
            paths = {frame["path"] for frame in failure["frames"]}
            assert paths == {"models.py"}, (module["mode"], failure["code"], paths)


def test_pt2_failures_carry_no_fx_leaf_module_advice(checked: dict[str, Any]) -> None:
    for diagnostic in checked["diagnostics"]:
        if diagnostic["mode"] != "fx":
            assert "leaf module" not in diagnostic["message"], diagnostic


def test_sarif_lists_a_graph_break_rule_with_pytorchs_page(workspace: Path) -> None:
    completed = fx_lsp(workspace, "check", "--no-cache", "--output-format", "sarif", ".")
    run = parse_report(completed.stdout)["runs"][0]
    rules = {rule["id"]: rule for rule in run["tool"]["driver"]["rules"]}
    assert "GB0170" in rules and "FX401" in rules
    # The registry's text of the break, which the SARIF goldens (none with a break) leave out.
    assert rules["GB0170"] == registry_sarif_rule("GB0170")
    assert rules["GB0170"]["helpUri"].startswith("https://")
    assert "fx-lsp" not in rules["GB0170"]["helpUri"]
    # Only the graph breaks that occur: not PyTorch's whole registry.
    assert sorted(code for code in rules if code.startswith("GB")) == ["GB0170"]


def test_a_graph_break_is_silenced_by_noqa_and_ignored_by_prefix(tmp_path: Path) -> None:
    text = MODELS.replace("        if y.abs().mean() > 1.0:",
                          "        if y.abs().mean() > 1.0:  # noqa: GB0170")
    (tmp_path / "models.py").write_text(text, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent("""\
        [tool.fx-lsp]
        modes = ["compile"]
        """), encoding="utf-8")
    completed = fx_lsp(tmp_path, "check", "--no-cache", "--output-format", "json", ".")
    assert completed.returncode == 0, completed.stdout
    assert parse_report(completed.stdout)["diagnostics"] == []
    (tmp_path / "models.py").write_text(MODELS, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent("""\
        [tool.fx-lsp]
        modes = ["compile"]
        ignore = ["GB"]
        """), encoding="utf-8")
    completed = fx_lsp(tmp_path, "check", "--no-cache", "--output-format", "json", ".")
    assert parse_report(completed.stdout)["diagnostics"] == [], completed.stdout


SHARED_HELPER = """\
import torch
from torch import nn


def halve_if_large(y):
    if y.abs().mean() > 1.0:
        y = y / 2
    return y


class First(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return halve_if_large(self.proj(x))


class Second(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return halve_if_large(self.proj(x)).relu()
"""


@pytest.fixture(scope="module")
def shared_helper(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shared")
    (root / "shared.py").write_text(SHARED_HELPER, encoding="utf-8")
    (root / "pyproject.toml").write_text(
        '[tool.fx-lsp]\nmodes = ["export", "compile"]\n', encoding="utf-8")
    return root


def test_a_helper_two_classes_reach_is_one_problem_per_mode_in_every_format(
        shared_helper: Path) -> None:
    """Export's FX401 and compile's GB0170 in a helper both classes call: one problem each,
    naming both classes, in json, concise, github and junit alike."""
    completed = fx_lsp(shared_helper, "check", "--no-cache", "--output-format", "json", ".")
    diagnostics = parse_report(completed.stdout)["diagnostics"]
    assert sorted((d["code"], d["line"], d["mode"], tuple(d["classes"])) for d in diagnostics) \
        == [("FX401", 6, "export", ("First", "Second")),
            ("GB0170", 6, "compile", ("First", "Second"))]
    concise = fx_lsp(shared_helper, "check", "--output-format", "concise", ".").stdout
    assert "shared.py:6:8: FX401 [First; also reached from Second] (export) " in concise
    assert "shared.py:6:5: GB0170 [First; also reached from Second] (compile) " in concise
    github = fx_lsp(shared_helper, "check", "--output-format", "github", ".").stdout.splitlines()
    assert [line.split("::")[1] for line in github] == [
        "warning file=shared.py,line=6,col=5,endLine=6,endColumn=29,title=fx-lsp (GB0170)",
        "error file=shared.py,line=6,col=8,endLine=6,endColumn=28,title=fx-lsp (FX401)"]
    junit = fx_lsp(shared_helper, "check", "--output-format", "junit", ".").stdout
    assert 'tests="2" failures="2"' in junit
    assert 'type="GB0170"' in junit and 'type="FX401"' in junit


def test_per_file_ignores_remove_export_and_compile_codes(tmp_path: Path) -> None:
    (tmp_path / "shared.py").write_text(SHARED_HELPER, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text(textwrap.dedent("""\
        [tool.fx-lsp]
        modes = ["export", "compile"]

        [tool.fx-lsp.per-file-ignores]
        "shared.py" = ["GB", "FX4"]
        """), encoding="utf-8")
    completed = fx_lsp(tmp_path, "check", "--no-cache", "--output-format", "json", ".")
    assert completed.returncode == 0, completed.stdout
    assert parse_report(completed.stdout)["diagnostics"] == []


#: Real torch exports and compiles it on the CPU; on meta the listed tensor stays meta and
#: `torch.geqrf` has no meta kernel.
HELD_QR = """\
import torch
from torch import nn


class HeldQr(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.tables = [torch.eye(4)]

    def forward(self, x):
        y = self.proj(x)
        return y + torch.geqrf(self.tables[0])[0].sum()
"""


def _held_qr_workspace(root: Path, select: str = "") -> Path:
    (root / "models.py").write_text(HELD_QR, encoding="utf-8")
    (root / "pyproject.toml").write_text(textwrap.dedent(f"""\
        [tool.fx-lsp]
        modes = ["export", "compile"]
        {select}

        [tool.fx-lsp.modules."models:HeldQr"]
        inputs = {{x = "float32[2, 8]"}}
        """), encoding="utf-8")
    return root


def test_an_operator_meta_cannot_run_is_not_checked_with_its_line(tmp_path: Path) -> None:
    """No verdict, so the run passes; the JSON gives each mode's class `not-traced` with the
    line in its reason and the located FX404/FX503 in its failures; the terminal notes name
    the line. FX404/FX503 are information: reported only when selected in full."""
    root = _held_qr_workspace(tmp_path)
    line = HELD_QR.splitlines().index("        return y + torch.geqrf(self.tables[0])[0].sum()") + 1
    completed = fx_lsp(root, "check", "--no-cache", "--output-format", "json", ".")
    assert completed.returncode == 0, completed.stdout + completed.stderr
    report = parse_report(completed.stdout)
    assert report["diagnostics"] == []
    assert report["summary"]["modes"] == {
        mode: {"traced": 0, "traceable": 0, "failed": 0, "not_traced": 1, "not_built": 0,
               "instance_does_not_fit": 0, "with_graph_breaks": 0, "on_real_instances": 0,
               "on_guessed_arguments": 0}
        for mode in ("export", "compile")}
    modules = {module["mode"]: module for module in report["modules"]}
    for mode, code, capture in (("export", "FX404", "torch.export"),
                                ("compile", "FX503", "torch.compile")):
        module = modules[mode]
        assert module["status"] == "not-traced"
        assert module["reason"].startswith(
            f"not checkable under {capture} on meta: line {line} runs `aten::geqrf`, which has "
            f"no meta kernel ({code}; ")
        (stopped,) = module["failures"]
        assert (stopped["code"], stopped["path"], stopped["line"]) == (code, "models.py", line)
        assert stopped["message"].startswith(
            f"Not checkable under {capture} without real data: this line runs `aten::geqrf`")
    notes = fx_lsp(root, "check", "--output-format", "concise", ".").stdout.splitlines()
    assert notes[0].startswith(
        f"models.py:5:7: note: FX103 HeldQr (export) was not traced. not checkable under "
        f"torch.export on meta: line {line} runs `aten::geqrf`")
    assert notes[1].startswith("models.py:5:7: note: FX103 HeldQr (compile) was not traced.")


def test_selected_in_full_fx404_and_fx503_are_reported_at_the_line(tmp_path: Path) -> None:
    root = _held_qr_workspace(tmp_path, select='select = ["FX", "GB", "FX404", "FX503"]')
    line = HELD_QR.splitlines().index("        return y + torch.geqrf(self.tables[0])[0].sum()") + 1
    completed = fx_lsp(root, "check", "--no-cache", "--output-format", "json", ".")
    assert completed.returncode == 0, completed.stdout + completed.stderr  # information
    found = {(d["code"], d["line"], d["mode"], d["severity"])
             for d in parse_report(completed.stdout)["diagnostics"]}
    assert found == {("FX404", line, "export", "hint"), ("FX503", line, "compile", "hint")}
