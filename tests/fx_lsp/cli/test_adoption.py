"""Adopting fx-lsp on a project that already has problems: ``fx-lsp check --write-baseline``
(``--baseline``, ``--show-fixed-baseline``) and ``--add-noqa``, through the real command line
on real files."""

from __future__ import annotations

import json
import re
import subprocess
import textwrap
from pathlib import Path

import nbformat

from fxcore.fixing.noqa_edits import add_noqa
from fxcore.reporting.baseline import Entry, fingerprint, match

from cli_support import fx_lsp

MODELS = {
    "a.py": '''
        import torch
        from torch import nn


        class A(nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    x = x + 1
                return x * len(x)


        class B(nn.Module):
            def forward(self, x):
                for row in x:
                    x = x + row
                return x
    ''',
    "b.py": '''
        import torch
        from torch import nn


        class C(nn.Module):
            def forward(self, x):
                if x.max() > 1:
                    return x
                return int(x.sum())


        class D(nn.Module):
            def forward(self, x):
                n = len(x)
                return x.view(n, -1) if x.mean() > 0 else x
    ''',
}
#: The problems of MODELS: (file, line, code).
PROBLEMS = {("a.py", 7, "FX001"), ("a.py", 9, "FX002"), ("a.py", 14, "FX003"),
            ("b.py", 7, "FX001"), ("b.py", 9, "FX004"), ("b.py", 14, "FX002"),
            ("b.py", 15, "FX001")}


def workspace(root: Path, files: dict[str, str] = MODELS) -> Path:
    (root / "pyproject.toml").write_text("[project]\nname = 'ws'\n[tool.fx-lsp]\n")
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text).lstrip("\n"))
    return root


def check(root: Path, *extra: str, paths: tuple[str, ...] = (".",)
          ) -> tuple[subprocess.CompletedProcess[str], set[tuple[str, int, str]]]:
    """The run and the (file, line, code) of each problem its JSON report holds."""
    completed = fx_lsp("check", "--no-cache", "--format", "json", *extra, *paths, cwd=root)
    assert completed.returncode in (0, 1), completed.stderr
    report = json.loads(completed.stdout)
    return completed, {(Path(d["path"]).name, d["line"], d["code"])
                       for d in report["diagnostics"]}


def summary_line(root: Path, *extra: str) -> str:
    completed = fx_lsp("check", "--no-cache", "--format", "concise", *extra, ".", cwd=root)
    return completed.stdout.strip().splitlines()[-1]


def test_a_baseline_subtracts_what_it_recorded_and_reports_what_is_new(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    assert check(root)[1] == PROBLEMS
    written = fx_lsp("check", "--no-cache", "--write-baseline", ".", cwd=root)
    assert written.returncode == 0, written.stdout + written.stderr
    assert "Wrote 7 problems to the baseline .fx-lsp-baseline.json." in written.stderr
    lines = (root / ".fx-lsp-baseline.json").read_text().splitlines()
    entries = [json.loads(line.strip().rstrip(",")) for line in lines if "fingerprint" in line]
    assert len(entries) == 7  # one a line, sorted, so that it diffs well
    assert entries == sorted(entries, key=lambda e: (e["file"], e["code"], e["mode"],
                                                     e["class_name"], e["fingerprint"]))
    assert {(e["file"], e["code"], e["class_name"]) for e in entries} >= {
        ("a.py", "FX002", "A"), ("b.py", "FX004", "C")}

    completed, problems = check(root)
    assert (completed.returncode, problems) == (0, set())
    assert json.loads(completed.stdout)["summary"]["baselined"] == 7
    assert summary_line(root).endswith("; 7 in the baseline, subtracted.")

    with (root / "a.py").open("a") as source:
        source.write("\n\nclass E(nn.Module):\n    def forward(self, x):\n"
                     "        return x.view(len(x), -1)\n")
    completed, problems = check(root)
    assert (completed.returncode, problems) == (1, {("a.py", 21, "FX002")})


def test_moved_lines_and_code_around_leave_the_baseline_matching(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    fx_lsp("check", "--no-cache", "--write-baseline", ".", cwd=root)
    for name in MODELS:
        path = root / name
        text = re.sub(r"(?m)^        return", "        # why\n        return", path.read_text())
        # Every class 20 lines down, and a class right after each file's last problem.
        path.write_text("# moved\n\n" * 10 + text
                        + "\n\nclass Fine(nn.Module):\n    def forward(self, x):\n"
                          "        return x  # noqa: E501\n")
    completed, problems = check(root)
    assert (completed.returncode, problems) == (0, set())
    assert summary_line(root).endswith("; 7 in the baseline, subtracted.")


def test_code_added_above_a_class_leaves_a_problem_on_its_name_matching() -> None:
    # A problem on a class's own line (an unused submodule, FX200) whose class is moved down
    # by module-level code added above it, as in a real library's file of many classes.
    text = "X = 1\n\n\n@register\nclass Head(nn.Module):\n    def forward(self, x):\n"
    moved = text.replace("X = 1\n", "X = 1\n" + "".join(f"Y{i} = {i}\n" for i in range(20)))
    assert fingerprint(moved, 25) == fingerprint(text, 5)
    assert fingerprint(moved, 24) == fingerprint(text, 4)  # the decorator's own line
    # The decorator is the class's own: changing it makes the class line's problem another.
    assert fingerprint(text.replace("@register", "@other"), 5) != fingerprint(text, 5)


def test_a_named_baseline_and_the_fixed_entries_it_lists(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    fx_lsp("check", "--no-cache", "--write-baseline", "--baseline", "ci-baseline.json", ".",
           cwd=root)
    assert not (root / ".fx-lsp-baseline.json").exists()
    assert check(root)[1] == PROBLEMS  # not the default file: not read unless named
    path = root / "b.py"
    path.write_text(path.read_text().replace("return int(x.sum())", "return x.sum()"))
    completed, problems = check(root, "--baseline", "ci-baseline.json",
                                "--show-fixed-baseline")
    assert (completed.returncode, problems) == (0, set())
    assert "1 baselined problem is fixed" in completed.stderr
    assert "  b.py: FX004 (fx) in C\n" in completed.stderr


def test_a_partial_run_keeps_the_other_files_entries(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    fx_lsp("check", "--no-cache", "--write-baseline", ".", cwd=root)
    (root / "a.py").write_text((root / "a.py").read_text().replace("* len(x)", "* 2"))
    rewritten = fx_lsp("check", "--no-cache", "--write-baseline", "a.py", cwd=root)
    assert "Wrote 6 problems to the baseline" in rewritten.stderr, rewritten.stderr
    (root / "b.py").unlink()  # a deleted file's problems are fixed
    completed, problems = check(root, "--show-fixed-baseline")
    assert (completed.returncode, problems) == (0, set())
    assert "4 baselined problems are fixed" in completed.stderr
    assert completed.stderr.count("  b.py: ") == 4


def test_a_baseline_that_cannot_be_used_stops_the_run(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    missing = fx_lsp("check", "--baseline", "none.json", ".", cwd=root)
    assert missing.returncode == 2 and "no such baseline: none.json" in missing.stderr
    (root / ".fx-lsp-baseline.json").write_text('{"version": 1, "problems": [{"code": 1}]}')
    damaged = fx_lsp("check", "--no-cache", ".", cwd=root)
    assert damaged.returncode == 2, damaged.stderr
    assert "fx-lsp check: the baseline " in damaged.stderr
    assert "not a baseline file" in damaged.stderr


def test_equal_problems_baselined_once_leave_one_reported() -> None:
    entry = Entry("a.py", "FX002", "fx", "A", "0123456789abcdef")
    other = Entry("b.py", "FX001", "fx", "C", "fedcba9876543210")
    matched = match([("first", entry), ("second", entry)], [entry, other], ["a.py", "b.py"])
    assert (matched.reported, matched.baselined, matched.fixed) == (["second"], ["first"],
                                                                     [other])
    assert match([], [other], ["a.py"]).fixed == []  # b.py not checked: not fixed


NOQA_MODELS = {
    **MODELS,
    "c.py": '''
        import torch
        from torch import nn


        class E(nn.Module):
            def forward(self, x):
                return len(x) if x.sum() > 0 else x  # noqa: FX001
    ''',
    "broken.py": "x = (\n",
}


def test_add_noqa_silences_every_problem_once(tmp_path: Path) -> None:
    root = workspace(tmp_path, NOQA_MODELS)
    first = fx_lsp("check", "--no-cache", "--add-noqa", ".", cwd=root)
    assert first.returncode == 0, first.stderr
    assert "Added noqa comments for 8 problems in 3 files." in first.stderr
    assert "broken.py:1:5: FX100: not silenced: the file cannot be imported" in first.stderr
    assert (root / "broken.py").read_text() == "x = (\n"
    texts = {name: (root / name).read_bytes() for name in NOQA_MODELS}
    assert b"        return x * len(x)  # noqa: FX002\n" in texts["a.py"]
    assert b"        if x.sum() > 0:  # noqa: FX001\n" in texts["a.py"]
    # Merged into the comment already there.
    assert b"return len(x) if x.sum() > 0 else x  # noqa: FX001, FX002\n" in texts["c.py"]

    second = fx_lsp("check", "--no-cache", "--add-noqa", ".", cwd=root)
    assert "Added noqa comments for 0 problems in 0 files." in second.stderr
    assert {name: (root / name).read_bytes() for name in NOQA_MODELS} == texts
    completed, problems = check(root, paths=("a.py", "b.py", "c.py"))
    assert (completed.returncode, problems) == (0, set())


def test_add_noqa_never_writes_through_a_link_out_of_the_workspace(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "a.py"
    target.write_text(textwrap.dedent(MODELS["a.py"]).lstrip("\n"))
    root = tmp_path / "ws"
    root.mkdir()
    workspace(root, {})
    (root / "a.py").symlink_to(target)
    before = target.read_text()
    added = fx_lsp("check", "--no-cache", "--add-noqa", ".", cwd=root)
    assert "Added noqa comments for 0 problems in 0 files." in added.stderr, added.stderr
    # Refused before it is read (the workspace boundary): only its FX100, which no comment
    # silences.
    assert "a.py:1:1: FX100: not silenced" in added.stderr, added.stderr
    assert target.read_text() == before and (root / "a.py").is_symlink()


def test_add_noqa_leaves_baselined_problems_alone(tmp_path: Path) -> None:
    root = workspace(tmp_path)
    fx_lsp("check", "--no-cache", "--write-baseline", ".", cwd=root)
    before = (root / "b.py").read_text()
    with (root / "a.py").open("a") as source:
        source.write("\n\nclass E(nn.Module):\n    def forward(self, x):\n"
                     "        return x.view(len(x), -1)\n")
    added = fx_lsp("check", "--no-cache", "--add-noqa", ".", cwd=root)
    assert "Added noqa comments for 1 problem in 1 file." in added.stderr, added.stderr
    assert (root / "a.py").read_text().count("# noqa") == 1
    assert (root / "b.py").read_text() == before
    assert check(root)[1] == set()


def test_add_noqa_edits_a_notebook_cell(tmp_path: Path) -> None:
    root = workspace(tmp_path, {})
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [
        nbformat.v4.new_markdown_cell("# Models"),
        nbformat.v4.new_code_cell("import torch\nfrom torch import nn"),
        nbformat.v4.new_code_cell("class Rows(nn.Module):\n    def forward(self, x):\n"
                                  "        return x.view(len(x), -1)"),
    ]
    nbformat.write(notebook, root / "models.ipynb")
    assert check(root)[1] == {("models.ipynb", 3, "FX002")}  # the cell's third line
    added = fx_lsp("check", "--no-cache", "--add-noqa", ".", cwd=root)
    assert "Added noqa comments for 1 problem in 1 file." in added.stderr, added.stderr
    cells = nbformat.read(root / "models.ipynb", as_version=4).cells
    assert cells[2].source.splitlines()[-1] == "        return x.view(len(x), -1)  # noqa: FX002"
    assert cells[1].source == "import torch\nfrom torch import nn"
    completed, problems = check(root)
    assert (completed.returncode, problems) == (0, set())


def test_noqa_goes_at_the_end_of_a_multi_line_string_or_continuation() -> None:
    text = ('s = f(1, """one\ntwo""")\n'
            'z = 3 + \\\n'
            '    4\n'
            'w = 1  # why  # noqa: E501\r\n'
            'v = 2  # noqa\n'
            'assert v, \\\n'
            '    """a\n'
            '    b"""  # noqa: FX001\n')
    codes = {1: {"FX001"}, 3: {"FX002"}, 4: {"FX003", "FX002"}, 5: {"FX003"}, 6: {"FX004"},
             7: {"FX002"}, 8: {"FX001"}, 12: {"FX001"}}
    edit = add_noqa(text, codes)
    lines = edit.text.splitlines(keepends=True)
    assert lines[1] == 'two""")  # noqa: FX001\n'
    assert lines[3] == "    4  # noqa: FX002, FX003\n"  # two problems' codes, one comment
    assert lines[4] == "w = 1  # why  # noqa: E501, FX003\r\n"
    assert lines[5] == "v = 2  # noqa\n"
    assert lines[8] == '    b"""  # noqa: FX001, FX002\n'  # a continuation into a string
    assert edit.text.count("noqa") == text.count("noqa") + 2
    assert edit.added == {1: ["FX001"], 3: ["FX002"], 4: ["FX002", "FX003"], 5: ["FX003"],
                          7: ["FX002"]}
    assert edit.refused == {12: "the problem has no line in the file"}
    again = add_noqa(edit.text, codes)
    assert (again.text, again.added) == (edit.text, {})
    assert add_noqa("x = (\n", {1: {"FX001"}}).refused == {1: "the file does not tokenize"}


#: Problems on lines a comment cannot end (timm's ``assert patches.ndim == 5, \``, an assert
#: whose message is a multi-line string, a continuation that ends in one): lines 6, 8 and 10.
CONTINUED = '''
    from torch import nn


    class Checked(nn.Module):
        def forward(self, x):
            assert x.ndim == 2, \\
                f"expected a matrix, got {x.ndim} dimensions"
            assert x.sum() > 0, """the input must be positive
                somewhere"""
            assert x.max() < 9, \\
                """the input must stay
                small"""
            return x + 1
'''


def test_add_noqa_silences_problems_on_continued_lines(tmp_path: Path) -> None:
    root = workspace(tmp_path, {"m.py": CONTINUED})
    assert check(root)[1] == {("m.py", 6, "FX001"), ("m.py", 8, "FX001"),
                              ("m.py", 10, "FX001")}
    first = fx_lsp("check", "--no-cache", "--add-noqa", ".", cwd=root)
    assert "Added noqa comments for 3 problems in 1 file." in first.stderr, first.stderr
    assert "not silenced" not in first.stderr
    text = (root / "m.py").read_text()
    assert text == textwrap.dedent(CONTINUED).lstrip("\n").replace(
        ' dimensions"\n', ' dimensions"  # noqa: FX001\n').replace(
        ' somewhere"""\n', ' somewhere"""  # noqa: FX001\n').replace(
        ' small"""\n', ' small"""  # noqa: FX001\n')
    second = fx_lsp("check", "--no-cache", "--add-noqa", ".", cwd=root)
    assert "Added noqa comments for 0 problems in 0 files." in second.stderr
    assert (root / "m.py").read_text() == text
    completed, problems = check(root)  # silenced, and no noqa reported unused (FX900)
    assert (completed.returncode, problems) == (0, set())
