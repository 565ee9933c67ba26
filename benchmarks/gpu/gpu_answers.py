"""fx-lsp's export and compile verdicts for classes judged for a GPU (``device = "cuda"``),
against real torch on an NVIDIA GPU, and the record of real torch's answers that lets a machine
without one compare its own verdicts with them.

On a GPU machine: fx-lsp checks the GPU-written, compile and export corpora (tests/corpus/gpu,
compile, export) with ``--mode export,compile``, judged for a GPU, the GPU visible; then, per
file in a fresh child process (``pt2_real_check.py`` with ``device="cuda"``), every class that
got example inputs is rebuilt from the JSON's ``arguments``, moved to the GPU, and run there on
real tensors of the JSON's ``inputs``: eagerly, under real ``torch.export`` (non-strict) and
real ``torch.compile`` (recording backend, breaks from torch's own log). Agreement is judged as
``pt2_library_coverage`` judges it (export: same verdict and first failing line; compile: same
verdict and first break or error, "exact": the same set of breaks with their GB codes).
``--record FILE`` writes real torch's answers, with the GPU, torch and Python they came from,
paths relative to the workspace.

Anywhere: ``--against FILE`` compares this machine's fx-lsp, judged for a GPU, with a record
(benchmarks/gpu/answers/): the same verdicts on a CPU-only build and on a CUDA build without a
GPU, which only means something for the torch release the record was made with.
``--device cpu`` runs the real side on the CPU with the classes judged for the CPU (the
benchmark's own check, on any machine).

    python3 -m benchmarks run gpu gpu_answers [-- --record FILE | --against FILE
        | --device cpu] [--corpus gpu,compile,export]
"""

from __future__ import annotations

import argparse
import collections
import json
import platform
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from benchmarks.fidelity.library_judging import Figures, absolute_paths, judge
from benchmarks.fidelity.pt2_real_check import real_outcomes
from benchmarks.gpu.gpu_agreement import gpu_name
from benchmarks.paths import REPOSITORY, child_environment
from benchmarks.provenance import machine_line
from benchmarks.tables import emit, markdown
from fx_lsp.cli.output_formats.json_report import parse_report

CORPORA = {name: Path(REPOSITORY) / "tests" / "corpus" / name
           for name in ("gpu", "compile", "export")}
ANSWERS = Path(__file__).resolve().parent / "answers"
#: Stands for the workspace's folder in a record's paths.
ROOT_MARK = "<workspace>"

ByMode = dict[str, dict[str, Any]]


def workspace(folder: Path, corpora: list[str], device: str) -> Path:
    """A workspace of the corpora's files, every class judged for ``device``."""
    for name in corpora:
        for path in sorted(CORPORA[name].glob("*.py")):
            shutil.copy(path, folder)
    (folder / "pyproject.toml").write_text(f'[tool.fx-lsp]\ndevice = "{device}"\n')
    return folder


#: fx-lsp's check of a workspace, as both sides compare it.
CHECK = ("-m", "fx_lsp", "check", "--no-cache", "--mode", "export,compile", "--output-format",
         "json", ".")


def by_file(report: dict[str, Any], root: Path) -> dict[str, dict[str, ByMode]]:
    """fx-lsp's export and compile modules for each class with example inputs, by file and
    class (``file.py:Class``), with real absolute paths as the comparisons read them."""
    classes: dict[str, ByMode] = collections.defaultdict(dict)
    for module in report["modules"]:
        classes[f"{module['path']}:{module['class']}"][module["mode"]] = {
            **absolute_paths(module, str(root)), "relative_path": module["path"]}
    found: dict[str, dict[str, ByMode]] = collections.defaultdict(dict)
    for name, by_mode in classes.items():
        if (by_mode["export"].get("inputs") or {}).get("tensors") is not None:
            found[by_mode["export"]["relative_path"]][name] = by_mode
    return found


def report_of(root: Path, python: str = sys.executable) -> dict[str, Any]:
    """fx-lsp's JSON report of ``root``, run with ``python`` (this one's, or another build's)."""
    completed = subprocess.run([python, *CHECK], cwd=root, capture_output=True, text=True,
                               env=child_environment(), check=False)
    if completed.returncode not in (0, 1):
        raise RuntimeError(f"fx-lsp check failed with {python}:\n{completed.stderr[-4000:]}")
    return parse_report(completed.stdout)


def checked(root: Path) -> dict[str, dict[str, ByMode]]:
    """fx-lsp's check of ``root``, by file and class (``by_file``)."""
    return by_file(report_of(root), root)


def real_answers(root: Path, classes: dict[str, dict[str, ByMode]],
                 device: str) -> dict[str, Any]:
    """Real torch's outcomes on ``device`` for each class, a child process per file."""
    def one_file(members: dict[str, ByMode]) -> dict[str, Any]:
        requests = [{"module": by_mode["export"], "compile": by_mode["compile"],
                     "inputs": by_mode["export"]["inputs"]["tensors"]}
                    for by_mode in members.values()]
        outcomes = real_outcomes(str(root), requests, device=device)
        return {name: {**outcome, "inputs": request["inputs"]}
                for name, request, outcome in zip(members, requests, outcomes, strict=True)}

    answers: dict[str, Any] = {}
    with ThreadPoolExecutor(max_workers=8) as pool:
        for found in pool.map(one_file, classes.values()):
            answers.update(found)
    return answers


def rerooted(value: Any, old: str, new: str) -> Any:
    """``value`` with each path under ``old`` (a folder) moved under ``new``."""
    if isinstance(value, dict):
        return {key: rerooted(item, old, new) for key, item in value.items()}
    if isinstance(value, list):
        return [rerooted(item, old, new) for item in value]
    if isinstance(value, str) and value.startswith(old + "/"):
        return new + value[len(old):]
    return value


def judged(classes: dict[str, dict[str, ByMode]], answers: dict[str, Any]) -> Figures:
    """fx-lsp's verdicts against real torch's answers, class by class."""
    figures = Figures("judged for a GPU")
    for members in classes.values():
        for name, by_mode in members.items():
            answer = answers.get(name)
            if answer is None:
                figures.disagreements.append(f"{name}: no real answer for it")
                continue
            if answer.get("inputs") != by_mode["export"]["inputs"]["tensors"]:
                figures.disagreements.append(
                    f"{name}: real torch ran on {answer.get('inputs')}, fx-lsp chose "
                    f"{by_mode['export']['inputs']['tensors']}")
            judge(figures, name, by_mode, answer)
    return figures


def report(figures: Figures, provenance: str) -> None:
    rows = [(mode, figures.tried[mode], figures.agree[mode]) for mode in ("export", "compile")]
    emit("gpu_answers", markdown(("mode", "classes", "fx-lsp agrees with real torch"), rows)
         + f"\n\ncompile, the same breaks exactly: {figures.exact_breaks}/"
           f"{figures.tried['compile']}; {provenance}")
    for line in figures.disagreements + figures.own_choices:
        print(f"- {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", help="cuda (default), or cpu")
    parser.add_argument("--record", type=Path, help="write real torch's answers here")
    parser.add_argument("--against", type=Path,
                        help="compare with this record instead of running real torch")
    parser.add_argument("--corpus", default="gpu,compile,export",
                        help="the corpora, of " + ", ".join(CORPORA))
    arguments = parser.parse_args()
    print(machine_line())
    import torch  # the version only: this process runs nothing on the GPU

    real_side = arguments.against is None
    if real_side and arguments.device == "cuda" and gpu_name() == "no NVIDIA GPU":
        print("no NVIDIA GPU here: nothing to measure (`--against FILE` compares with a "
              "record, `--device cpu` runs the benchmark itself on the CPU)")
        return
    with tempfile.TemporaryDirectory() as folder:
        root = workspace(Path(folder).resolve(), arguments.corpus.split(","),
                         arguments.device)
        classes = checked(root)
        if real_side:
            answers = real_answers(root, classes, arguments.device)
            provenance = (f"real torch {torch.__version__} on {arguments.device} "
                          f"({gpu_name() if arguments.device == 'cuda' else 'CPU'})")
        else:
            record = json.loads(arguments.against.read_text())
            answers = rerooted(record["answers"], ROOT_MARK, str(root))
            provenance = (f"real torch {record['torch']} on {record['gpu']}, recorded; "
                          f"fx-lsp here on torch {torch.__version__}")
        report(judged(classes, answers), provenance)
        if real_side and arguments.record is not None:
            arguments.record.parent.mkdir(parents=True, exist_ok=True)
            arguments.record.write_text(json.dumps({
                "gpu": gpu_name() if arguments.device == "cuda" else "CPU",
                "torch": torch.__version__, "python": platform.python_version(),
                "corpora": arguments.corpus.split(","),
                "answers": rerooted(answers, str(root), ROOT_MARK)}, indent=1, sort_keys=True)
                + "\n")
            print(f"recorded: {arguments.record}")


if __name__ == "__main__":
    main()
