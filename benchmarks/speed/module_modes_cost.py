"""What judging classes in both ``nn.Module`` modes costs ``fx-lsp check --mode
fx,export,compile`` on a real library, three ways in the same run, one after the other on
the same files (``--repeat 2``: each order reversed the second time):

- one mode: this tree with ``module-mode = "eval"`` (export in eval mode as "auto" does,
  compile in that one mode), as every class was judged before classes were judged in both;
- before: ``--baseline-ref`` (default 990d882, the commit before classes were compiled in
  both modes only where code beside torch's layers reads ``training``, its files taken with
  ``timed_check.tree_at``), which compiled in both modes every class with a dropout or a batch
  norm anywhere in its module tree;
- after: this tree, which compiles a class in both modes only where code beside torch's own
  layers reads ``training`` (``fxcore.worker.module_modes.judging``).

Times in wall seconds and in CPU seconds of the process tree (``getrusage(RUSAGE_CHILDREN)``,
which other work on a shared machine does not inflate). Beside them: how many compile verdicts
came from two captures, and whether "after"'s diagnostics (code, line, message, mode) are
"before"'s.

The library is MONAI 1.6.1's building blocks (``monai/networks/blocks``, as the library
coverage benchmark checks them), a sample of ``--files`` files from the unpacked wheel in
``~/.cache/fx-lsp-corpus`` (``scripts/install-corpus.sh``):

    python3 -m benchmarks run speed module_modes_cost -- --files 8
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from typing import Any

from benchmarks.fidelity.repo_coverage import Library, unpacked_root
from benchmarks.fidelity.timed_check import short_commit, tree_at
from benchmarks.paths import child_environment
from benchmarks.tables import emit, markdown
from fx_lsp.cli.output_formats.json_report import parse_report

BASELINE = "990d882"
CORPUS = os.path.join(os.path.expanduser("~"), ".cache", "fx-lsp-corpus")
BLOCKS = "monai/networks/blocks"
#: Blocks of MONAI's networks, dropout and norm layers among them (its ``Convolution`` and
#: ``ResidualUnit`` take both), in the order ``--files`` takes them.
SAMPLE = ("convolutions.py", "mlp.py", "segresnet_block.py", "squeeze_and_excitation.py",
          "unetr_block.py", "dynunet_block.py", "transformerblock.py", "selfattention.py",
          "localnet_block.py", "regunet_block.py", "fcn.py", "upsample.py")
MONAI = Library("monai", "monai", "1.6.1", (BLOCKS,), archive="wheel")


@contextlib.contextmanager
def setting(root: str, one_mode: bool) -> Iterator[None]:
    """The copy's pyproject.toml set to ``module-mode = "eval"`` while a one-mode run checks
    it, and removed for the others: the three runs check the same files, imported from the
    same folder (its bytecode cache warm alike)."""
    pyproject = os.path.join(root, "pyproject.toml")
    if one_mode:
        with open(pyproject, "w", encoding="utf-8") as handle:
            handle.write('[tool.fx-lsp]\nmodule-mode = "eval"\n')
    try:
        yield
    finally:
        if os.path.exists(pyproject):
            os.remove(pyproject)


def timed(root: str, files: list[str], workers: int, repository: str | None
          ) -> tuple[dict[str, Any], float, float]:
    """The JSON report of fx-lsp (this tree's, or the one in ``repository``) on ``files``,
    its wall seconds and the CPU seconds of its process tree."""
    environment = child_environment(repository=repository) if repository else \
        child_environment()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--workers", str(workers),
         "--mode", "fx,export,compile", "--output-format", "json", *files],
        cwd=root, env=environment, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if completed.returncode not in (0, 1) or not completed.stdout.strip():
        raise RuntimeError(f"fx-lsp check failed:\n{completed.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return parse_report(completed.stdout), wall, cpu


def diagnostics(report: dict[str, Any]) -> dict[tuple[str, str], list[tuple[Any, ...]]]:
    """Each verdict's diagnostics, by (class, capture mode)."""
    return {(module["qualified_name"], module["mode"]): sorted(
        (failure["code"], failure["line"], failure["message"], failure.get("module_mode"))
        for failure in module["failures"]) for module in report["modules"]}


def two_captures(report: dict[str, Any]) -> int:
    """Compile verdicts made of a capture in each mode."""
    return sum(1 for module in report["modules"]
               if module["mode"] == "compile" and "graph_counts" in module)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=8, help="how many of the sample's files")
    parser.add_argument("--baseline-ref", default=BASELINE)
    parser.add_argument("--repeat", type=int, default=1, help="rounds; 2 for ABBA")
    parser.add_argument("--workers", type=int, default=1)
    options = parser.parse_args(argv)
    root = unpacked_root(MONAI, CORPUS)
    files = [os.path.join(BLOCKS, name) for name in SAMPLE[:options.files]]
    runs: dict[str, list[tuple[dict[str, Any], float, float]]] = {
        "one mode": [], "before": [], "after": []}
    with tree_at(options.baseline_ref) as baseline, tempfile.TemporaryDirectory() as folder:
        # A copy: the setting is the workspace's, and the cached library is left as it is.
        copy = os.path.join(folder, "monai")
        shutil.copytree(root, copy)
        repositories = {"one mode": None, "before": baseline, "after": None}
        for round_number in range(options.repeat):
            order = list(runs) if round_number % 2 == 0 else list(reversed(runs))
            for which in order:
                with setting(copy, which == "one mode"):
                    runs[which].append(timed(copy, files, options.workers,
                                             repositories[which]))
    before, after = runs["before"][-1][0], runs["after"][-1][0]
    wall = {which: min(run[1] for run in found) for which, found in runs.items()}
    cpu = {which: min(run[2] for run in found) for which, found in runs.items()}
    compiled = sum(1 for module in after["modules"] if module["mode"] == "compile")
    differ = [key for key, found in diagnostics(after).items()
              if diagnostics(before).get(key) != found]
    ref = short_commit(options.baseline_ref)
    labels = {"one mode": 'one mode (`module-mode = "eval"`)',
              "before": f"before ({ref}): both modes wherever a submodule reads `training`",
              "after": "after: both modes where code beside torch's layers reads it"}
    rows = [[labels[which], f"{wall[which]:.1f} s", f"{cpu[which]:.1f} s",
             f"{two_captures(runs[which][-1][0])} of {compiled}",
             f"{wall[which] / wall['one mode']:.2f}x", f"{cpu[which] / cpu['one mode']:.2f}x"]
            for which in runs]
    rows.append(["after's diagnostics against before's", "-", "-", "-",
                 f"{len(differ)} of {len(diagnostics(after))} verdicts differ", "-"])
    # The sample above the table (a table block holds the table alone).
    print(f"MONAI 1.6.1, {len(files)} files of `{BLOCKS}` ({', '.join(SAMPLE[:options.files])}),"
          f" `--mode fx,export,compile`, {options.workers} worker(s), fastest of "
          f"{options.repeat}:")
    emit("module_modes_cost", markdown(
        ["fx-lsp", "wall", "CPU", "compile verdicts from two captures", "wall / one mode",
         "CPU / one mode"], rows))
    for key in differ:
        print(json.dumps({"class": key, "before": diagnostics(before).get(key),
                          "after": diagnostics(after)[key]}, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
