"""The benchmark suites (benchmarks/): the runner lists every suite folder and every module in
it, and a run's table replaces its own README block and nothing else."""

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


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="a GPU may be here")
def test_the_gpu_suite_measures_nothing_without_a_gpu_and_says_so() -> None:
    completed = run_benchmarks("run", "gpu", "--no-readme")
    assert completed.returncode == 0, completed.stderr
    assert "no NVIDIA GPU here: nothing to measure" in completed.stdout


def test_an_unknown_benchmark_is_refused_with_the_suites_names() -> None:
    completed = run_benchmarks("run", "speed", "no_such_benchmark")
    assert completed.returncode != 0
    assert "not in suite speed: no_such_benchmark" in completed.stderr
    assert "graph_page_cap" in completed.stderr


README = """# Benchmarks

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
    replaced = replace_block(README, "second", "| new |\n|---|\n| 5 |")
    assert replaced == README.replace("| old | second |\n|---|---|\n", "| new |\n|---|\n| 5 |\n")
    assert replace_block(README, "third", "| new |") is None


def test_a_written_table_carries_its_provenance_and_leaves_the_rest(tmp_path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(README)
    table = markdown(["class", "seconds"], [["Llama", "1.23"]])
    missing = write_tables(str(readme), {"first": table, "absent": table},
                           provenance_line("python3 -m benchmarks run speed first"))
    assert missing == ["absent"]
    text = readme.read_text()
    block = text[text.index("<!-- table: first -->"):text.index("<!-- /table -->") + 15]
    provenance, blank, *rows = block.splitlines()[1:-1]
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO_ROOT,
                          capture_output=True, text=True, check=True).stdout.strip()
    assert provenance.startswith("_Written by `python3 -m benchmarks run speed first` on ")
    assert f"commit {head}" in provenance
    assert f"({os.cpu_count()} cores), Python {platform.python_version()}" in provenance
    assert f"torch {torch_version()}" in provenance
    assert blank == "" and "\n".join(rows) == table
    assert text[text.index("<!-- /table -->"):] == README[README.index("<!-- /table -->"):]
    assert text[:text.index("<!-- table: first -->")] == README[:README.index("<!-- table")]


def test_a_benchmark_run_by_the_runner_records_its_table() -> None:
    """graph_page_cap on 50 nodes: the runner starts the module and reads the table it
    emitted (--no-readme: the real README is not written by a test)."""
    completed = run_benchmarks("run", "speed", "graph_page_cap", "--no-readme", "--",
                               "--nodes", "50", "--runs", "1")
    assert completed.returncode == 0, completed.stderr
    assert "| 50-node class | page | built in (median of 1) |" in completed.stdout
    assert "emits no README table" not in completed.stdout


#: A block's first line: the provenance line a suite run writes, or why no run wrote it yet.
WRITTEN = re.compile(r"_Written by `python3 -m benchmarks run (\S+) (\S+)( -- [^`]*)?` on "
                     r"[^:]+:\d\d \S+: commit [0-9a-f]+( \+ uncommitted changes)?, .+ \(\d+ "
                     r"cores\), Python \S+, torch \S+; load average [\d.]+ [\d.]+ [\d.]+\._")
NOT_YET = re.compile(r"_Not written by a suite run yet: .+\._")
BLOCK = re.compile(r"<!-- table: (\S+) -->\n(.*?)<!-- /table -->\n", re.DOTALL)


def readme_blocks() -> tuple[dict[str, str], str]:
    """benchmarks/README.md's table blocks by name, and its text outside them."""
    text = (BENCHMARKS / "README.md").read_text()
    return dict(BLOCK.findall(text)), BLOCK.sub("", text)


def test_every_table_in_the_readme_was_written_by_a_run_or_says_why_not() -> None:
    blocks, outside = readme_blocks()
    # A table outside the blocks was copied there by hand: no run rewrites it.
    assert [line for line in outside.splitlines() if line.startswith("|")] == []
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
    blocks, _ = readme_blocks()
    emitted = {}
    for suite in SUITES:
        for benchmark in suite.benchmarks:
            source = (BENCHMARKS / suite.name / f"{benchmark.name}.py").read_text()
            for name in benchmark.emits:
                # The registry names what the module emits: a name it does not hold is stale.
                assert f'"{name}"' in source, f"{suite.name}/{benchmark.name}: {name}"
                emitted[name] = benchmark.name
    assert sorted(blocks) == sorted(emitted)
