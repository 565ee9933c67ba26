"""``fx-lsp check``'s output formats, statistics and --output-file, over real files:
SARIF validated against the official 2.1.0 schema, GitHub workflow commands parsed back."""

from __future__ import annotations

import json
import os
import re
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import jsonschema
import pytest

from fxcore.rules.compile import GRAPH_BREAK_RULES
from fxcore.rules.documentation import documentation

from cli_support import fx_lsp
from engine_support import REPO_ROOT, line_of
from output_goldens import registry_sarif_rule

SARIF_SCHEMA = REPO_ROOT.parent / "shared" / "reference" / "sarif-schema-2.1.0.json"

MULTI = '''
import torch
from torch import nn


def steps(x):
    return len(x)


class Block(nn.Module):
    def forward(self, x):
        if x.sum() > 0:
            x = x + 1
        for row in x:
            x = x + row
        return x * steps(x)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x):
        return self.block(x)


class Spare(nn.Module):
    def __init__(self):
        super().__init__()
        self.used = nn.Linear(2, 2)
        self.extra = nn.Linear(2, 2)

    def forward(self, x):
        return self.used(x)
'''

#: Non-ASCII text (2 columns wide per character on a terminal) before the failing range.
WIDE = '''
from torch import nn


class Wide(nn.Module):
    def forward(self, x):
        n = {"名前": 1}["名前"] + len(x)
        return x * n
'''


def cli(*arguments: str, cwd: Path, env: dict[str, str] | None = None
        ) -> subprocess.CompletedProcess[str]:
    return fx_lsp(*arguments, cwd=cwd, env={**os.environ, **(env or {})})


def project(root: Path, **files: str) -> Path:
    (root / "pyproject.toml").write_text("[project]\nname = 'ws'\n")
    for name, text in files.items():
        (root / name).write_text(text.lstrip("\n"), encoding="utf-8")
    return root


def sarif_schema() -> dict:
    if not SARIF_SCHEMA.exists():
        pytest.fail(f"the shared SARIF schema is missing: {SARIF_SCHEMA}")
    return json.loads(SARIF_SCHEMA.read_text())


@pytest.mark.parametrize("where", ["examples", "multi"])
def test_sarif_validates_against_the_official_schema(where: str, tmp_path: Path) -> None:
    if where == "examples":
        cwd, paths = REPO_ROOT, ["examples"]
    else:
        cwd, paths = project(tmp_path, **{"multi.py": MULTI}), ["."]
    completed = cli("check", "--no-cache", "--output-format", "sarif", *paths, cwd=cwd)
    assert completed.returncode == 1, completed.stderr
    report = json.loads(completed.stdout)
    jsonschema.validate(report, sarif_schema())
    run = report["runs"][0]
    results = run["results"]
    assert results and all(r["ruleId"].startswith("FX") for r in results)
    rules = {rule["id"]: rule for rule in run["tool"]["driver"]["rules"]}
    # Every code of this project; PyTorch's graph breaks only when one occurs (none here).
    assert set(rules) == set(documentation()) - {rule.code for rule in GRAPH_BREAK_RULES}
    assert rules["FX002"]["helpUri"].endswith("/codes/FX002/")
    assert "size(0)" in rules["FX002"]["help"]["text"]
    for result in results:
        assert rules[result["ruleId"]] == run["tool"]["driver"]["rules"][result["ruleIndex"]]
    if where == "multi":
        codes = {(r["ruleId"], r["locations"][0]["physicalLocation"]["region"]["startLine"])
                 for r in results}
        path = tmp_path / "multi.py"
        assert {("FX001", line_of(path, "x.sum() > 0")), ("FX003", line_of(path, "for row")),
                ("FX002", line_of(path, "len(x)")), ("FX200", line_of(path, "self.extra"))} \
            <= codes
        levels = {r["ruleId"]: r["level"] for r in results}
        assert levels["FX200"] == "note" and levels["FX001"] == "error"


def test_every_sarif_rule_carries_the_registrys_text(tmp_path: Path) -> None:
    """The one check of the rules' text, which the SARIF goldens leave out: each rule says
    exactly what the registry says of its code."""
    completed = cli("check", "--no-cache", "--output-format", "sarif", ".",
                    cwd=project(tmp_path, **{"multi.py": MULTI}))
    rules = json.loads(completed.stdout)["runs"][0]["tool"]["driver"]["rules"]
    assert len(rules) == len(documentation()) - len(GRAPH_BREAK_RULES)
    assert [rule for rule in rules if rule != registry_sarif_rule(rule["id"])] == []


def test_a_failure_reached_from_several_classes_is_one_diagnostic(tmp_path: Path) -> None:
    completed = cli("check", "--no-cache", "--format", "json", ".",
                    cwd=project(tmp_path, **{"multi.py": MULTI}))
    diagnostics = json.loads(completed.stdout)["diagnostics"]
    control = [d for d in diagnostics if d["code"] == "FX001"]
    assert len(control) == 1
    assert control[0]["classes"] == ["Block", "Net"]
    concise = cli("check", "--no-cache", "--output-format", "concise", ".", cwd=tmp_path)
    assert "FX001 [Block; also reached from Net] " in concise.stdout
    lines = [line for line in concise.stdout.splitlines() if re.match(r"multi\.py:\d+", line)]
    keys = [tuple(int(n) for n in line.split(":")[1:3]) for line in lines]
    assert keys == sorted(keys)


_GITHUB = re.compile(r"^::(error|warning|notice) file=([^,]+),line=(\d+),col=(\d+),"
                     r"endLine=(\d+),endColumn=(\d+),title=([^:]+)::(.*)$")


def _unescape(text: str) -> str:
    return (text.replace("%0A", "\n").replace("%0D", "\r").replace("%3A", ":")
            .replace("%2C", ",").replace("%25", "%"))


def test_github_lines_parse_back_to_the_diagnostics(tmp_path: Path) -> None:
    root = project(tmp_path, **{"multi.py": MULTI})
    github = cli("check", "--no-cache", "--output-format", "github", ".", cwd=root)
    report = json.loads(cli("check", "--no-cache", "--format", "json", ".", cwd=root).stdout)
    parsed = []
    for line in github.stdout.splitlines():
        match = _GITHUB.match(line)
        assert match, line
        level, path, line_number, column, _, _, title, message = match.groups()
        parsed.append((_unescape(path), int(line_number), int(column), _unescape(message)))
        assert _unescape(title).startswith("fx-lsp (FX")
        assert level == ("notice" if "FX200" in title else "error")
    expected = [(d["path"], d["line"], d["column"], d["message"])
                for d in report["diagnostics"]]
    assert [(p, n, c) for p, n, c, _ in parsed] == [(p, n, c) for p, n, c, _ in expected]
    assert all(m.endswith(message) for (_, _, _, m), (*_, message) in zip(parsed, expected,
                                                                            strict=True))
    assert github.returncode == 1


def test_full_format_underlines_the_range_after_wide_text(tmp_path: Path) -> None:
    root = project(tmp_path, **{"wide.py": WIDE})
    completed = cli("check", "--no-cache", "--output-format", "full", ".", cwd=root,
                    env={"NO_COLOR": "1"})
    lines = completed.stdout.splitlines()
    source = next(line for line in lines if "len(x)" in line and "|" in line)
    carets = lines[lines.index(source) + 1]
    assert "\x1b[" not in completed.stdout  # not a terminal, and NO_COLOR
    # 名前 takes two terminal columns per character: the carets sit under len(x) on screen.
    from rich.cells import cell_len

    start = cell_len(source[: source.index("len(x)")])
    assert carets.index("^") == start
    assert carets[start:].startswith("^^^^^^ FX002")
    assert "= help: Wrap len for tracing" in completed.stdout
    assert lines[0].startswith("wide.py:6:")


def test_statistics_exit_zero_and_output_file(tmp_path: Path) -> None:
    root = project(tmp_path, **{"multi.py": MULTI})
    statistics = cli("check", "--no-cache", "--statistics", ".", cwd=root)
    rows = [line.split("\t") for line in statistics.stdout.splitlines()]
    assert {(count.strip(), code) for count, code, _ in rows} >= {("1", "FX001"), ("1", "FX002")}
    assert statistics.returncode == 1
    written = cli("check", "--output-format", "junit", "--output-file", "report.xml",
                  "--exit-zero", ".", cwd=root)
    assert written.returncode == 0 and written.stdout == ""
    suites = ET.parse(root / "report.xml").getroot()
    assert suites.tag == "testsuites"
    failures = suites.findall("./testsuite/testcase/failure")
    assert {failure.get("type") for failure in failures} >= {"FX001", "FX002", "FX003"}


def test_every_option_is_in_the_help() -> None:
    completed = cli("check", "--help", cwd=REPO_ROOT)
    for option in ("--output-format", "--output-file", "--statistics", "--exit-zero", "--fix",
                   "--diff", "--unsafe-fixes", "--shard"):
        assert option in completed.stdout
