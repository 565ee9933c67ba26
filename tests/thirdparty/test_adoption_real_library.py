"""fx-lsp adopted on a real library through the real command line: timm's ``layers`` (158
classes in 70 files for timm 1.0.31) copied into a new git repository
(``benchmarks/speed/timm_layers_repository.py``), the baseline and ``--add-noqa`` on a sample
of the files (SAMPLE_EVERY): a baseline written and then
subtracted, a problem added reported alone, every class moved down 20 lines adding none,
``--add-noqa`` twice the same as once; ``fx-lsp diff`` over a commit that adds a graph break
and fixes an FX failure, in each format, and from its cache."""

from __future__ import annotations

import ast
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.speed import timm_layers_repository as layers
from fxcore.host.engine import Engine

from cli_support import fx_lsp

#: The checks of the library (a problem added, the classes moved, noqa comments added each
#: touch every trace, as the package's ``__init__`` imports every module) take minutes on a
#: loaded 2-core machine: past the default limit of 300 s a test.
pytestmark = [pytest.mark.thirdparty, pytest.mark.timeout(1800)]
#: The baseline test checks a fifth of the package's files (every fifth by name) and mlp.py,
#: which it edits: seven checks of every file took about 6 minutes of CI's time. The whole
#: package is what ``benchmarks/speed/graph_diff.py --timm-layers`` checks.
SAMPLE_EVERY = 5

#: A problem added at the top of Mlp.forward, on a line of its own.
ADDED = "        if x.sum() > 0:\n            x = x + 1\n"
MOVED_BY = 20


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    """Two workers: the library is checked again after each edit, its hundred classes each
    time (its ``__init__`` imports every module, so an edit anywhere touches every trace)."""
    own = Engine(workers=2)
    yield own
    own.close()


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    try:
        return layers.build(tmp_path / "repository")
    except layers.LayersNotFound as missing:
        pytest.skip(str(missing))


Problems = set[tuple[str, int, str]]


def check(root: Path, engine: Engine, *arguments: str
          ) -> tuple[subprocess.CompletedProcess[str], Problems, dict]:
    """The run, the (file, line, code) of each problem of its JSON report, and its summary."""
    completed = fx_lsp("check", "--format", "json", *arguments, cwd=root, engine=engine)
    assert completed.returncode in (0, 1), completed.stderr
    report = json.loads(completed.stdout)
    return completed, {(d["path"], d["line"], d["code"]) for d in report["diagnostics"]}, \
        report["summary"]


def add_problem(path: Path, class_name: str) -> None:
    """ADDED as the first lines of the class's forward."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    forward = next(node for top in tree.body
                   if isinstance(top, ast.ClassDef) and top.name == class_name
                   for node in top.body
                   if isinstance(node, ast.FunctionDef) and node.name == "forward")
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    lines.insert(forward.body[0].lineno - 1, ADDED)
    path.write_text("".join(lines), encoding="utf-8")


def move_classes_down(package: Path) -> None:
    """Every top-level class (with its decorators) of every file MOVED_BY lines down, below
    module-level code added right above it."""
    for path in package.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        lines = text.splitlines(keepends=True)
        starts = {min([node.lineno, *(d.lineno for d in node.decorator_list)])
                  for node in ast.parse(text).body if isinstance(node, ast.ClassDef)}
        for start in sorted(starts, reverse=True):
            lines[start - 1:start - 1] = [f"_moved_{i} = {i}\n" for i in range(MOVED_BY)]
        path.write_text("".join(lines), encoding="utf-8")


def sample(package: Path) -> list[str]:
    """The files the baseline test checks, as paths from the repository's root."""
    files = sorted(package.glob("*.py"))
    chosen = {path for index, path in enumerate(files) if index % SAMPLE_EVERY == 0}
    return [f"{layers.PACKAGE}/{path.name}" for path in sorted({*chosen, package / "mlp.py"})]


def sources(package: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in package.glob("*.py")}


def test_a_baseline_and_noqa_comments_on_a_real_library(repository: Path,
                                                        engine: Engine) -> None:
    root, package = repository, repository / layers.PACKAGE
    # With the files its problems are located in (a helper's line in a file of no class):
    # --add-noqa silences only problems in the files checked.
    _, problems, _ = check(root, engine, *sample(package))
    files = sorted({*sample(package), *(path for path, _, _ in problems)})
    written = fx_lsp("check", "--write-baseline", *files, cwd=root, engine=engine)
    assert written.returncode == 0, written.stderr
    count = int(re.search(r"Wrote (\d+) problems to the baseline", written.stderr)[1])
    completed, problems, summary = check(root, engine, *files)
    assert summary["classes"] >= 15 and count >= 5, (summary, count)
    assert (completed.returncode, problems, summary["baselined"]) == (0, set(), count)

    mlp = package / "mlp.py"
    add_problem(mlp, "Mlp")
    completed, problems, _ = check(root, engine, *files)
    added = (f"{layers.PACKAGE}/mlp.py", layers.line_of(mlp, ADDED), "FX001")
    assert (completed.returncode, problems) == (1, {added})

    move_classes_down(package)
    completed, problems, summary = check(root, engine, "--show-fixed-baseline", *files)
    moved = (added[0], layers.line_of(mlp, ADDED), "FX001")
    assert moved[1] > added[1]
    assert (completed.returncode, problems, summary["baselined"]) == (1, {moved}, count)
    assert "0 baselined problems are fixed." in completed.stderr, completed.stderr

    (root / ".fx-lsp-baseline.json").unlink()
    first = fx_lsp("check", "--add-noqa", *files, cwd=root, engine=engine)
    assert first.returncode == 0, first.stderr
    assert f"Added noqa comments for {count + 1} problems in " in first.stderr, first.stderr
    assert "not silenced" not in first.stderr
    once = sources(package)
    second = fx_lsp("check", "--add-noqa", *files, cwd=root, engine=engine)
    assert "Added noqa comments for 0 problems in 0 files." in second.stderr, second.stderr
    assert sources(package) == once
    completed, problems, summary = check(root, engine, *files)
    assert (completed.returncode, problems, summary["suppressed"]) == (0, set(), count + 1)


def test_what_a_real_library_commit_did_to_the_graphs(repository: Path,
                                                      engine: Engine) -> None:
    root = repository
    lines = layers.graph_change(root)
    space_to_depth = f"{layers.PACKAGE}/space_to_depth.py"
    classifier = f"{layers.PACKAGE}/classifier.py"

    def diff(*extra: str) -> subprocess.CompletedProcess[str]:
        return fx_lsp("diff", "--mode", "fx,compile", *extra, cwd=root, engine=engine)

    first = diff("HEAD~1", "HEAD", "--output-format", "json")
    assert first.returncode == 0, first.stderr
    counts = [re.fullmatch(r"(BASE \(HEAD~1\)|HEAD \(HEAD\)): (\d+) files checked, "
                           r"(\d+) from the cache", line) for line in first.stderr.splitlines()]
    assert all(counts) and len(counts) == 2, first.stderr
    checked = int(counts[0][2])  # the two files and the ones importing them
    assert [(int(c[2]), int(c[3])) for c in counts] == [(checked, 0)] * 2, first.stderr
    report = json.loads(first.stdout)
    changes = {(c["path"], c["class"], c["mode"]): c for c in report["changes"]}
    assert set(changes) == {(space_to_depth, "SpaceToDepth", "compile"),
                            (space_to_depth, "SpaceToDepth", "fx"),
                            (classifier, "ClassifierHead", "fx")}, report
    broken = changes[space_to_depth, "SpaceToDepth", "compile"]
    assert (broken["before"]["verdict"], broken["after"]["verdict"]) == ("traceable",
                                                                         "graph breaks")
    assert (broken["before"]["graphs"], broken["after"]["graphs"]) == (1, 2)
    line = lines["SpaceToDepth"]
    assert [(p["code"], p["line"]) for p in broken["new_problems"]] == [("GB0170", line)]
    untraceable = changes[space_to_depth, "SpaceToDepth", "fx"]
    assert [(p["code"], p["line"]) for p in untraceable["new_problems"]] == [("FX001", line)]
    fixed = changes[classifier, "ClassifierHead", "fx"]
    assert (fixed["before"]["verdict"], fixed["after"]["verdict"]) == ("failed", "traceable")
    assert [(p["code"], p["line"]) for p in fixed["fixed_problems"]] == [
        ("FX001", lines["ClassifierHead"])]
    assert fixed["new_problems"] == [] and not fixed["regression"]
    assert report["regressions"] == 2

    # Again, in the other formats: both revisions' files come from the cache.
    markdown = diff("HEAD~1", "HEAD", "--output-format", "markdown")
    assert markdown.stderr.splitlines() == [
        f"BASE (HEAD~1): {checked} files checked, {checked} from the cache",
        f"HEAD (HEAD): {checked} files checked, {checked} from the cache"], markdown.stderr
    assert ("\n2 classes changed, 2 regressions (3 rows, one per class and capture mode).\n"
            in markdown.stdout)
    rows = [row for row in markdown.stdout.splitlines() if row.startswith(f"| {layers.PACKAGE}")]
    assert len(rows) == 3, markdown.stdout
    assert any(row.startswith(f"| {space_to_depth}::SpaceToDepth (regression) | compile | "
                              "traceable → graph breaks | 1 → 2 |")
               and f"+ GB0170 line {line}:" in row for row in rows), rows
    assert any(f"| {space_to_depth}::SpaceToDepth (regression) | fx | traceable → failed"
               in row and f"+ FX001 line {line}:" in row for row in rows), rows
    assert any(f"| {classifier}::ClassifierHead | fx | failed → traceable" in row
               and f"- FX001 line {lines['ClassifierHead']}:" in row for row in rows), rows
    table = diff("HEAD~1", "HEAD", "--fail-on", "regression")
    assert table.returncode == 1, table.stderr
    assert set(re.findall(rf"{layers.PACKAGE}/\w+\.py::\w+", table.stdout)) == {
        f"{space_to_depth}::SpaceToDepth", f"{classifier}::ClassifierHead"}, table.stdout
    for shown in (f"+ GB0170 line {line}:", f"+ FX001 line {line}:",
                  f"- FX001 line {lines['ClassifierHead']}:"):
        assert shown in table.stdout, table.stdout

    # An unchanged tree: nothing reported, no revision checked.
    unchanged = diff("HEAD", "--fail-on", "regression")
    assert (unchanged.returncode, unchanged.stdout.strip(), unchanged.stderr) == (
        0, "No class's graphs changed.", "")
    assert layers.git(root, "status", "--porcelain") == ""  # the user's tree as it was
