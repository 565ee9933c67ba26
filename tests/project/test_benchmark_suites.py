"""The benchmark suites (benchmarks/): the runner lists every suite folder and every module in
it, and a run's table replaces its own block, in whichever page of docs/benchmarks/ holds it,
and nothing else."""

from __future__ import annotations

import os
import platform
import re
import shutil
import subprocess
import sys

import pytest

from engine_support import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT))
from benchmarks.provenance import provenance_line, torch_version
from benchmarks.suites import SUITES, suite_named
from benchmarks.tables import markdown, replace_block, write_tables

BENCHMARKS = REPO_ROOT / "benchmarks"
PAGES = REPO_ROOT / "docs" / "benchmarks"


def run_benchmarks(*arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "benchmarks", *arguments], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=300, check=False)


def test_list_names_every_suite_folder_and_every_module_in_it() -> None:
    listed = run_benchmarks("list")
    assert listed.returncode == 0, listed.stderr
    suites: dict[str, list[str]] = {}
    for line in listed.stdout.splitlines():
        if not line.startswith(" "):
            suites[line.partition(":")[0]] = []
        elif not line.strip().startswith("("):
            suites[list(suites)[-1]].append(re.split(r"[ :]", line.strip())[0])
    folders = sorted(entry.name for entry in BENCHMARKS.iterdir()
                     if (entry / "__init__.py").exists())
    assert sorted(suites) == folders
    for name, benchmarks in suites.items():
        suite = suite_named(name)
        assert suite is not None
        modules = sorted(path.stem for path in (BENCHMARKS / name).glob("*.py")
                         if path.stem != "__init__")
        # A module the registry forgets would never run; one it names without a file, fail.
        assert sorted([*benchmarks, *suite.helpers]) == modules, name
    assert "gpu" in suites and suites["gpu"] == ["gpu_agreement", "gpu_answers", "build_agreement"]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="a GPU may be here")
def test_the_gpu_suite_measures_nothing_without_a_gpu_and_says_so() -> None:
    completed = run_benchmarks("run", "gpu", "--no-pages")
    assert completed.returncode == 0, completed.stderr
    assert "no NVIDIA GPU here: nothing to measure" in completed.stdout


def test_an_unknown_benchmark_is_refused_with_the_suites_names() -> None:
    completed = run_benchmarks("run", "speed", "no_such_benchmark")
    assert completed.returncode != 0
    assert "not in suite speed: no_such_benchmark" in completed.stderr
    assert "graph_page_cap" in completed.stderr


PAGE = """# Speed

Text before.

<!-- table: first -->
| old | first |
|---|---|
| 1 | 2 |
<!-- /table -->

Text between, with a table of its own:

| kept | by hand |
|---|---|
| 3 | 4 |

<!-- table: second -->
| old | second |
|---|---|
<!-- /table -->
Text after.
"""


def test_replacing_a_block_changes_only_that_block() -> None:
    replaced = replace_block(PAGE, "second", "| new |\n|---|\n| 5 |")
    assert replaced == PAGE.replace("| old | second |\n|---|---|\n", "| new |\n|---|\n| 5 |\n")
    assert replace_block(PAGE, "third", "| new |") is None


OTHER_PAGE = """# Scale

<!-- table: elsewhere -->
_Not written by a suite run yet: a test's page._
<!-- /table -->
"""


def test_a_written_table_carries_its_provenance_and_leaves_the_rest(tmp_path) -> None:
    page, other = tmp_path / "speed.md", tmp_path / "scale.md"
    page.write_text(PAGE)
    other.write_text(OTHER_PAGE)
    (tmp_path / "notes.txt").write_text("<!-- table: first -->\n<!-- /table -->\n")
    table = markdown(["class", "seconds"], [["Llama", "1.23"]])
    written, missing = write_tables(
        str(tmp_path), {"first": table, "elsewhere": table, "absent": table},
        provenance_line("python3 -m benchmarks run speed first"))
    # Each table goes to the page that holds its block; a file that is no page is not read.
    assert written == {str(other): ["elsewhere"], str(page): ["first"]}
    assert missing == ["absent"]
    assert "<!-- table: first -->\n<!-- /table -->" in (tmp_path / "notes.txt").read_text()
    assert other.read_text().count("| Llama | 1.23 |") == 1
    text = page.read_text()
    block = text[text.index("<!-- table: first -->"):text.index("<!-- /table -->") + 15]
    provenance, blank, *rows = block.splitlines()[1:-1]
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT,
                          capture_output=True, text=True, check=True).stdout.strip()
    assert provenance.startswith("_Written by `python3 -m benchmarks run speed first` on ")
    assert f"commit {head}" in provenance
    assert f"({os.cpu_count()} cores), Python {platform.python_version()}" in provenance
    assert f"torch {torch_version()}" in provenance
    assert blank == "" and "\n".join(rows) == table
    assert text[text.index("<!-- /table -->"):] == PAGE[PAGE.index("<!-- /table -->"):]
    assert text[:text.index("<!-- table: first -->")] == PAGE[:PAGE.index("<!-- table")]


def test_a_benchmark_run_by_the_runner_records_its_table() -> None:
    """graph_page_cap on 50 nodes: the runner starts the module and reads the table it
    emitted (--no-pages: the real pages are not written by a test)."""
    completed = run_benchmarks("run", "speed", "graph_page_cap", "--no-pages", "--",
                               "--nodes", "50", "--runs", "1")
    assert completed.returncode == 0, completed.stderr
    assert "| 50-node class | page | built in (median of 1) |" in completed.stdout
    assert "emits no table" not in completed.stdout
    assert "written into" not in completed.stdout


#: A block's first line: the provenance line a suite run writes, or why no run wrote it yet.
WRITTEN = re.compile(r"_Written by `python3 -m benchmarks run (\S+) (\S+)( -- [^`]*)?` on "
                     r"[^:]+:\d\d \S+: commit [0-9a-f]+( \+ uncommitted changes)?, .+ \(\d+ "
                     r"cores\), Python \S+, torch \S+; load average [\d.]+ [\d.]+ [\d.]+\._")
NOT_YET = re.compile(r"_Not written by a suite run yet: .+\._")
BLOCK = re.compile(r"<!-- table: (\S+) -->\n(.*?)<!-- /table -->\n", re.DOTALL)


def page_blocks() -> tuple[dict[str, str], dict[str, str]]:
    """The table blocks of the pages of docs/benchmarks/ by name, and each page's text outside
    them, by page."""
    blocks: dict[str, str] = {}
    outside = {}
    for page in sorted(PAGES.glob("*.md")):
        text = page.read_text()
        for name, body in BLOCK.findall(text):
            # The runner writes a table into every block of its name: two would be two copies.
            assert name not in blocks, f"{name}: a block in more than one page ({page.name})"
            blocks[name] = body
        outside[page.name] = BLOCK.sub("", text)
    return blocks, outside


def test_every_table_in_the_pages_was_written_by_a_run_or_says_why_not() -> None:
    blocks, outside = page_blocks()
    # A table outside the blocks was copied there by hand: no run rewrites it.
    for page, text in outside.items():
        assert [line for line in text.splitlines() if line.startswith("|")] == [], page
    for name, body in blocks.items():
        first, *rest = body.splitlines()
        written = WRITTEN.fullmatch(first)
        if written is None:
            assert NOT_YET.fullmatch(first), f"{name}: {first}"
            assert not [line for line in rest if line.startswith("|")], name
            continue
        suite = suite_named(written.group(1))
        benchmark = suite.benchmark(written.group(2)) if suite else None
        # The run named above the table is one whose benchmark emits a table of that name.
        assert benchmark is not None and name in benchmark.emits, f"{name}: {first}"
        assert rest[0] == "" and rest[1].startswith("| ") and rest[2].startswith("|---"), name


def test_every_table_a_benchmark_emits_has_its_block() -> None:
    blocks, _ = page_blocks()
    emitted = {}
    for suite in SUITES:
        for benchmark in suite.benchmarks:
            source = (BENCHMARKS / suite.name / f"{benchmark.name}.py").read_text()
            for name in benchmark.emits:
                # The registry names what the module emits: a name it does not hold is stale.
                assert f'"{name}"' in source, f"{suite.name}/{benchmark.name}: {name}"
                emitted[name] = benchmark.name
    assert sorted(blocks) == sorted(emitted)
