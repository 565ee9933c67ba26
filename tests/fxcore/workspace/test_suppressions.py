"""Suppression comments, select/ignore/per-file-ignores and unused suppressions (FX900): the
pure parts, and ``fx-lsp check`` over a real workspace."""

from __future__ import annotations

import json
import textwrap
import tokenize
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fxcore.model.job_spec import ReportConfig
from fxcore.reporting.report import Selection
from fxcore.workspace import suppressions

from cli_support import fx_lsp
from engine_support import line_of

MODEL = '''
import torch
from torch import nn


def helper(x):
    return len(x)


class A(nn.Module):
    def forward(self, x):
        if x.sum() > 0:  # noqa: FX001
            x = x + 1
        return x * helper(x)  # fx-lsp: ignore[FX002, FX003]


class B(nn.Module):
    def forward(self, x):
        return helper(x)


class C(nn.Module):  # fx-lsp: skip
    def forward(self, x):
        return len(x)


class D(nn.Module):
    def __init__(self):
        super().__init__()
        self.spare = nn.Linear(2, 2)

    def forward(self, x):
        y = x + 1  # noqa: FX005
        return y  # noqa: E501
'''


def check(root: Path, *extra: str) -> tuple[int, dict]:
    completed = fx_lsp("check", "--no-cache", "--format", "json", *extra, ".", cwd=root)
    assert completed.returncode in (0, 1), completed.stderr
    return completed.returncode, json.loads(completed.stdout)


def project(root: Path, table: str = "", **files: str) -> Path:
    (root / "pyproject.toml").write_text(f"[project]\nname = 'ws'\n[tool.fx-lsp]\n{table}\n")
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def where(report: dict) -> set[tuple[str, int, str]]:
    return {(d["path"], d["line"], d["code"]) for d in report["diagnostics"]}


def test_comments_are_parsed_as_ruff_spells_them() -> None:
    text = ('x = 1  # noqa: FX002,FX003\n'
            'y = 2  # NOQA\n'
            'z = 3  # fx-lsp: ignore[FX001]\n'
            'w = "# noqa: FX004"\n'
            'class K:  # fx-lsp: skip\n'
            '    v = 4  # fx-lsp: ignore\n')
    found = suppressions.parse(text)
    assert [(d.kind, d.codes) for d in found[1]] == [("noqa", frozenset({"FX002", "FX003"}))]
    assert found[2][0].codes is None and found[2][0].reportable_codes == frozenset()
    assert found[3][0].silences("FX001") and not found[3][0].silences("FX002")
    assert 4 not in found  # inside a string
    assert found[5][0].kind == "skip" and not found[5][0].silences("FX001")
    assert found[6][0].codes is None and found[6][0].reportable_codes is None
    assert suppressions.skipped_lines(text) == {5}


def test_ignore_comments_are_added_and_unused_codes_removed() -> None:
    text = "a = len(x)  # noqa: E501, FX002 keep\nb = 1  # fx-lsp: ignore[FX001]\nc = 2\n"
    assert suppressions.add_ignore(text, 3, "FX002").splitlines()[2] == \
        "c = 2  # fx-lsp: ignore[FX002]"
    assert suppressions.add_ignore(text, 2, "FX002").splitlines()[1] == \
        "b = 1  # fx-lsp: ignore[FX001, FX002]"
    assert suppressions.add_ignore(text, 2, "FX001") == text
    first, second = suppressions.parse(text)[1][0], suppressions.parse(text)[2][0]
    assert suppressions.remove_unused(text, 1, first, frozenset({"FX002"})).splitlines()[0] \
        == "a = len(x)  # noqa: E501 keep"
    assert suppressions.remove_unused(text, 2, second, None).splitlines()[1] == "b = 1"
    alone = "a = 1  # noqa: FX002 because\n"
    assert suppressions.remove_unused(alone, 1, suppressions.parse(alone)[1][0], None) == \
        "a = 1  # because\n"


#: Lines 1, 3 and 6 cannot end with a comment: a backslash continuation (as in timm's
#: ``assert patches.ndim == 5, \``), a statement whose multi-line string opens on its line (its
#: next line, in brackets, can), and a continuation that ends in a multi-line string (one
#: range, as in ruff).
CONTINUED = (
    'assert x.ndim == 5, \\\n'
    '    f"expected 5 dimensions, got {x.ndim}"\n'
    'y = f(x, """first\n'
    '      second""",\n'
    '      z)\n'
    'assert x.max() < 9, \\\n'
    '    """the input must stay\n'
    '    small"""  # why\n'
    'z = 1  # a comment ending with a backslash \\\n'
    'w = 2\n'
)


def test_continued_lines_are_governed_by_the_comment_at_their_end() -> None:
    governing = suppressions.governing_lines(CONTINUED)
    assert governing.moved == {1: 2, 3: 4, 6: 8, 7: 8}
    assert [governing.of(line) for line in (2, 4, 5, 8, 9, 10)] == [2, 4, 5, 8, 9, 10]
    assert suppressions.governing_lines("x = (\n").moved == {}  # does not tokenize
    added = suppressions.add_ignore(CONTINUED, 1, "FX001")
    assert added.splitlines()[1].endswith('{x.ndim}"  # fx-lsp: ignore[FX001]')
    added = suppressions.add_ignore(added, 6, "FX001")
    assert added.splitlines()[7] == '    small"""  # why  # fx-lsp: ignore[FX001]'
    assert suppressions.add_ignore(added, 7, "FX001") == added


def test_a_comment_at_the_end_of_a_continuation_silences_its_first_line(
        tmp_path: Path) -> None:
    project(tmp_path, "", **{"m.py": '''
        from torch import nn


        class A(nn.Module):
            def forward(self, x):
                assert x.ndim == 2, \\
                    f"expected a matrix, got {x.ndim} dimensions"  # fx-lsp: ignore[FX001]
                assert x.sum() > 0, """the input must be
                    positive somewhere"""  # noqa: FX001, FX002
                return x
        '''})
    _, report = check(tmp_path)
    path = tmp_path / "m.py"
    # Both silenced; the noqa's FX002 silenced nothing, its FX001 is used.
    assert where(report) == {("m.py", line_of(path, "positive somewhere"), "FX900")}
    (unused,) = report["diagnostics"]
    assert "Unused suppression of FX002" in unused["message"]
    assert report["summary"]["suppressed"] == 2


def test_selection_takes_the_longest_prefix_and_per_file_ignores(tmp_path: Path) -> None:
    selection = Selection(ReportConfig(select=["FX0", "FX200"], ignore=["FX00"],
                                       per_file_ignores={"tests/*": ["FX2"]}), str(tmp_path))
    assert selection.reports("FX012", str(tmp_path / "m.py"))
    assert not selection.reports("FX002", str(tmp_path / "m.py"))
    assert not selection.reports("FX101", str(tmp_path / "m.py"))
    assert selection.reports("FX200", str(tmp_path / "m.py"))
    assert not selection.reports("FX200", str(tmp_path / "tests" / "t.py"))


def test_each_suppression_form_in_the_cli(tmp_path: Path) -> None:
    status, report = check(project(tmp_path, "", **{"m.py": MODEL}))
    found = where(report)
    path = tmp_path / "m.py"
    # A's len() through its ignored call is silenced; B reaches it through its own call.
    b = next(d for d in report["diagnostics"] if d["code"] == "FX002")
    assert (b["path"], b["line"], b["classes"]) == ("m.py", line_of(path, "len(x)"), ["B"])
    assert not any(code == "FX001" for _, _, code in found)
    # FX003 of ignore[FX002, FX003] silenced nothing; nor did noqa: FX005.
    assert ("m.py", line_of(path, "ignore[FX002, FX003]"), "FX900") in found
    assert ("m.py", line_of(path, "noqa: FX005"), "FX900") in found
    assert not any(line == line_of(path, "E501") for _, line, _ in found)  # another tool's
    c = next(m for m in report["modules"] if m["class"] == "C")
    assert c["status"] == "not-traced" and "fx-lsp: skip" in c["reason"]
    assert ("m.py", line_of(path, "self.spare ="), "FX200") in found
    assert report["summary"]["suppressed"] == 1
    assert status == 1


def test_select_ignore_and_per_file_ignores_in_the_cli(tmp_path: Path) -> None:
    project(tmp_path, 'ignore = ["FX900", "FX200"]\nper-file-ignores = {"sub/*" = ["FX0"]}',
            **{"m.py": MODEL})
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "n.py").write_text(
        "from torch import nn\n\n\nclass E(nn.Module):\n    def forward(self, x):\n"
        "        return len(x)\n")
    status, report = check(tmp_path)
    assert where(report) == {("m.py", line_of(tmp_path / "m.py", "len(x)"), "FX002")}
    assert status == 1
    project(tmp_path, 'select = ["FX2"]', **{"m.py": MODEL})
    status, report = check(tmp_path)
    assert {code for _, _, code in where(report)} == {"FX200"}
    assert status == 0  # a hint does not fail the run


def test_a_fully_suppressed_run_passes(tmp_path: Path) -> None:
    project(tmp_path, "", **{"m.py": '''
        from torch import nn


        class A(nn.Module):
            def forward(self, x):
                return x * len(x)  # noqa: FX002
        '''})
    status, report = check(tmp_path)
    assert (status, report["diagnostics"], report["summary"]["suppressed"]) == (0, [], 1)


def test_a_file_without_directives_is_not_tokenized(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tokenizing a file of thousands of classes takes seconds; one with no directive has
    # nothing to find, and a report over it has no comment to look up.
    tokenized: list[object] = []
    generate_tokens = tokenize.generate_tokens

    def counted(readline: Callable[[], str]) -> Iterator[tokenize.TokenInfo]:
        tokenized.append(readline)
        return generate_tokens(readline)

    monkeypatch.setattr(tokenize, "generate_tokens", counted)
    many = "".join(f"class M{i}:\n    x = '# not a comment {i}'\n" for i in range(100))
    assert suppressions.parse(many) == {}
    assert tokenized == []
    assert list(suppressions.parse(many + "y = 1  # noqa: FX200\n")) == [201]
    assert len(tokenized) == 1
