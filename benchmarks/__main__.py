"""``python3 -m benchmarks list`` and ``python3 -m benchmarks run SUITE [NAME...] [-- ARGS]``.

``run`` runs each named benchmark of the suite (all that need no arguments when none is
named) as ``python3 -m benchmarks.SUITE.NAME ARGS`` from the repository root, one after
another, and writes the tables they emit into their blocks in the benchmark pages of the
documentation, docs/benchmarks/*.md (see ``tables``).
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile

from benchmarks.paths import PAGES, REPOSITORY
from benchmarks.provenance import commit, provenance_line
from benchmarks.suites import SUITES, Benchmark, Suite, suite_named
from benchmarks.tables import TABLES_ENVIRONMENT, recorded, write_tables


def list_suites() -> None:
    for suite in SUITES:
        print(f"{suite.name}: {suite.measures}")
        if not suite.benchmarks:
            print("  (no benchmarks yet)")
        for benchmark in suite.benchmarks:
            needs = f" [needs {benchmark.needs}]" if benchmark.needs else ""
            print(f"  {benchmark.name}{needs}: {benchmark.measures}")


def chosen(suite: Suite, names: list[str], has_arguments: bool) -> list[Benchmark]:
    """The benchmarks to run; exits with the reason when a name is not one of the suite's."""
    if not names:
        if has_arguments:
            sys.exit("arguments after -- go to named benchmarks: name them")
        skipped = [found.name for found in suite.benchmarks if found.needs]
        if skipped:
            print(f"not run (they need arguments; name them): {', '.join(skipped)}")
        return [found for found in suite.benchmarks if not found.needs]
    unknown = [name for name in names if suite.benchmark(name) is None]
    if unknown:
        known = ", ".join(found.name for found in suite.benchmarks) or "none yet"
        sys.exit(f"not in suite {suite.name}: {', '.join(unknown)} (its benchmarks: {known})")
    return [benchmark for name in names if (benchmark := suite.benchmark(name))]


def run_benchmark(suite: Suite, benchmark: Benchmark, arguments: list[str],
                  pages: str | None) -> bool:
    """Runs one benchmark, its output straight to this terminal; writes its tables into the
    pages of the folder ``pages`` (None: prints them only)."""
    module = f"benchmarks.{suite.name}.{benchmark.name}"
    print(f"== {suite.name}/{benchmark.name} ==", flush=True)
    measured = commit()
    with tempfile.TemporaryDirectory() as scratch:
        recording = os.path.join(scratch, "tables.jsonl")
        completed = subprocess.run([sys.executable, "-m", module, *arguments], cwd=REPOSITORY,
                                   env={**os.environ, TABLES_ENVIRONMENT: recording},
                                   check=False)
        tables = recorded(recording)
    if completed.returncode != 0:
        print(f"{suite.name}/{benchmark.name} exited {completed.returncode}; "
              "its tables are not written")
        return False
    if not tables:
        print(f"{suite.name}/{benchmark.name} emits no table")
    elif pages is not None:
        # As typed: the arguments after "--" go to the benchmark, not to the runner.
        command = shlex.join(["python3", "-m", "benchmarks", "run", suite.name,
                              benchmark.name, *(["--", *arguments] if arguments else [])])
        written, missing = write_tables(pages, tables, provenance_line(command, measured))
        for page, names in written.items():
            print(f"written into {os.path.relpath(page, REPOSITORY)}: {', '.join(names)}")
        for name in missing:
            print(f"no block <!-- table: {name} --> in {os.path.relpath(pages, REPOSITORY)}/: "
                  "add one to the page that explains it")
    return True


def main(argv: list[str]) -> int:
    arguments = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[:argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(prog="python3 -m benchmarks",
                                     description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="every suite and its benchmarks")
    run = commands.add_parser("run", help="run a suite's benchmarks (or those named)",
                              epilog="ARGS after -- go to each named benchmark")
    run.add_argument("suite", choices=[suite.name for suite in SUITES])
    run.add_argument("names", nargs="*", metavar="NAME")
    run.add_argument("--no-pages", action="store_true",
                     help="print the tables only; leave the pages of docs/benchmarks/ as they "
                          "are")
    options = parser.parse_args(own)
    if options.command == "list":
        list_suites()
        return 0
    suite = suite_named(options.suite)
    assert suite is not None  # argparse checked the choice
    if not suite.benchmarks:
        print(f"suite {suite.name} has no benchmarks yet: nothing to run "
              f"({suite.measures})")
        return 0
    pages = None if options.no_pages else PAGES
    results = [run_benchmark(suite, benchmark, arguments, pages)
               for benchmark in chosen(suite, options.names, bool(arguments))]
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
