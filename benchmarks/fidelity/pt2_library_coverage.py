"""fx, export and compile verdicts on libraries fx-lsp was not tuned on, against real torch.

Real torch on the CPU (and plain torch.fx for fx) is the reference, run in the same run.

Each library is a pinned release from PyPI unpacked as a user's checkout
(``repo_coverage.unpacked_root``); fx-lsp checks a stated part of it with no configuration,
``fx-lsp check --no-cache --mode fx,export,compile --output-format json``, in the unpacked root.
Then, per file in a fresh child process (``pt2_real_check.py``), every class that got example
inputs is rebuilt from the JSON's ``arguments`` on the CPU with real weights and run on real
tensors of the JSON's ``inputs``: eagerly, under real ``torch.export`` (non-strict) and under
real ``torch.compile`` (recording backend, breaks from torch's own log); every fx verdict is
compared with plain ``torch.fx.symbolic_trace`` on the same instance (``plain_fx_check.py``).
Printed per library and mode:

- classes with a forward of their own (bases, whose forward only raises
  NotImplementedError, and abstract classes apart), their verdicts (fx: traceable or failed
  while tracing; export: exports or fails under export; compile: compiles whole, with breaks
  or with an error) and the classes without one, by cause (``no_verdict_causes.py``:
  constructor arguments, example inputs, does not fit, time-out, ...); targets at most 5%
  without an export or compile verdict, at least 95% with an fx verdict;
- classes whose code needs an optional package that is not installed, by package, counted
  apart: the shares are of the other classes (a missing optional package is the user's
  environment, not fx-lsp's choice);
- own-choice FX499/FX502: an export failure or compile error that the module raises eagerly
  too on the same instance and inputs (the same innermost line), which must be the "does not
  fit" hint (FX406/FX504) instead; target none;
- agreement: export as ``tests/thirdparty/export_compare.compare`` judges it (same verdict,
  the real first failing line in fx-lsp's first failure's chain), compile as
  ``tests/thirdparty/compile_agreement.compare`` (same verdict, same first break or error;
  "exact": the same set of breaks with their GB codes), fx as ``plain_fx_check.disagreement``
  (same status and first failure line);
- "forward raises on every input tried" (FX408/FX509), apart: each agrees only where the
  module called eagerly on the CPU on the same instance and the first of those inputs raises
  the same error at the same line, and is counted among the mode's verdicts and agreements
  (``verdicts_apart.py``);
- a class whose constructor raises here on what an installed package lacks, whatever its
  arguments (FX101 in every mode, cause "installed X lacks X.f"), apart: real torch builds it
  from the report's arguments, and it is a verdict in every mode, agreeing, only where that
  raises an AttributeError at a line of fx-lsp's chain (``verdicts_apart.judge_unbuilt``);
- with ``--baseline-ref``, the verdicts the baseline had that this tree lost (class and
  mode), listed after the table;
- fx-lsp's seconds per verdict (every mode's verdicts), and with ``--baseline-ref`` the
  baseline's beside it, with the classes that get a verdict in a mode for the first time
  measured apart: their files' job seconds, median and worst (``verdicts_apart.py``); each
  class that had a verdict at the baseline against its own time then (its capture seconds,
  summed over the modes with a verdict at both, without compile mode's loop of calls; bound
  1.5x), the classes over it listed after the table; the loop of calls' own seconds apart, as
  new work (the recompilations it finds had no verdict at the baseline, which had no loop):
  the classes whose capture ran it, their median and worst seconds, the sum, and the sum
  over the files' jobs (the submodules judged inside a class too); and the seconds per
  verdict without the jobs' loop seconds beside those with them;
- false errors (``false_errors.py``), export and compile: the error verdicts (severity
  "error"), those whose instance and inputs run eagerly on the CPU, the FX408/FX509 real torch
  raises as said, the false ones (target 0: the inputs fail eagerly, or the constructor does)
  and the "does not fit" rows (FX406/FX504) that run eagerly (target 0), both listed after
  the table;
- fx-lsp's seconds, and with ``--baseline-ref COMMIT`` the seconds of that commit's fx-lsp on
  the same folders with the same options, timed in turn with it in the same run (``--repeat
  N``: N times each, alternating which goes first, the fastest of each kept), and their ratio.

    python3 -m benchmarks run fidelity pt2_library_coverage --
        [--library NAME] [--drawn DIST==VERSION:FOLDER[,FOLDER...][:wheel]]
        [--workers 1] [--timeout 60] [--keep DIR] [--reuse DIR]
        [--baseline-ref COMMIT [--repeat N]] [--as-before] [--table NAME]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
from typing import Any

from benchmarks.fidelity.false_errors import error_verdicts, judge_false_errors
from benchmarks.fidelity.library_judging import (
    MODES,
    Figures,
    absolute_paths,
    check_fx,
    count_verdicts,
    has_verdict,
    judge,
    judge_unbuilt_class,
)
from benchmarks.fidelity.no_verdict_causes import (
    IMPORT_FAILED,
    diagnostic_messages,
    unimported_files,
)
from benchmarks.fidelity.pt2_real_check import real_outcomes
from benchmarks.fidelity.repo_coverage import (
    Library,
    is_base,
    unpacked_root,
)
from benchmarks.fidelity.timed_check import short_commit, timed_check, timed_pair, tree_at
from benchmarks.fidelity.verdicts_apart import (
    first_verdict_files,
    jobs_loop_seconds,
    judged_otherwise,
    kept_verdict_seconds,
    loop_seconds,
    lost_verdicts,
    verdict_count,
)
from benchmarks.provenance import engine_version
from benchmarks.tables import emit, markdown
from fx_lsp.cli.output_formats.json_report import parse_report

#: vit-pytorch's architectures of their own design (the README's list): its many
#: ``simple_vit_with_*`` variants and self-supervised wrappers (dino, mae, ...) are left out.
VIT_FILES = ("vit", "simple_vit", "vit_1d", "vit_3d", "cait", "cct", "cross_vit", "crossformer",
             "cvt", "deepvit", "levit", "local_vit", "max_vit", "mobile_vit", "nest", "pit",
             "regionvit", "rvt", "scalable_vit", "sep_vit", "t2t", "twins_svt", "vivit", "xcit",
             "na_vit")
LIBRARIES = [
    # Its package imports dino.py, which imports torchvision: the CPU torch here needs the
    # shim (repo_coverage.add_torchvision_shim).
    Library("vit-pytorch", "vit-pytorch", "1.26.11",
            tuple(f"vit_pytorch/{name}.py" for name in VIT_FILES),
            needs_torchvision_shim="vit_pytorch"),
    Library("efficientnet-pytorch", "efficientnet-pytorch", "0.7.1", ("efficientnet_pytorch",)),
    # Four libraries of kinds fx-lsp was never measured on before (medical imaging, audio,
    # segmentation). MONAI is published as a wheel only; its building blocks are measured.
    Library("monai", "monai", "1.6.1", ("monai/networks/blocks",), archive="wheel"),
    # Its package imports torchvision (the encoders subclass its ResNet, VGG, DenseNet).
    Library("segmentation-models-pytorch", "segmentation-models-pytorch", "0.6.0",
            ("segmentation_models_pytorch/decoders", "segmentation_models_pytorch/base"),
            needs_torchvision_shim="segmentation_models_pytorch"),
    Library("nnaudio", "nnaudio", "0.3.4", ("nnAudio/features",)),
    Library("julius", "julius", "0.2.8", ("julius",)),
]
#: The blocks of the four libraries (MONAI, segmentation-models-pytorch, nnaudio, julius)
#: measured after the work that searched constructor arguments and inputs for them: MONAI
#: on one tree and the other three on a later one, each with its own provenance.
#: The four measured together, with the verdicts lost since the baseline and the constructor
#: verdicts counted. julius alone, after the loop of calls was made cheaper. julius, then
#: segmentation-models-pytorch, with each class's own time against the baseline's. julius,
#: with the loop of calls' seconds apart from the bound. Libraries drawn from the pool after
#: the work that shows errors only on inputs that run, with the false errors counted.
AFTER_TABLES = ("pt2_library_coverage_after_monai", "pt2_library_coverage_after_others",
                "pt2_library_coverage_four_libraries",
                "pt2_library_coverage_julius_loop", "pt2_library_coverage_per_class",
                "pt2_library_coverage_per_class_smp", "pt2_library_coverage_loop_apart",
                "pt2_library_coverage_loop_apart_smp", "pt2_library_coverage_loop_apart_others",
                "pt2_library_coverage_drawn")


def fx_lsp_report(library: Library, root: str, options: argparse.Namespace,
                  figures: Figures) -> dict:
    """This tree's report (kept, or reused from ``--reuse``), its seconds and, with
    ``--baseline-ref``, the seconds of that commit's fx-lsp on the same folders."""
    timing_path = os.path.join(options.reuse or options.keep or "", f"{library.name}.seconds.json")
    if options.reuse:
        with open(os.path.join(options.reuse, f"{library.name}.json")) as handle:
            report = handle.read()
        timing = {}
        if os.path.exists(timing_path):
            with open(timing_path) as handle:
                timing = json.load(handle)
        figures.seconds = timing.get("seconds", 0.0)
        figures.baseline_seconds = timing.get("baseline_seconds")
        figures.baseline_ref = timing.get("baseline_ref")
        baseline_path = os.path.join(options.reuse, f"{library.name}.baseline.json")
        if os.path.exists(baseline_path):
            with open(baseline_path) as handle:
                timed_against(figures, parse_report(report), parse_report(handle.read()))
        return parse_report(report)
    check_options = ["--workers", str(options.workers), "--timeout", str(options.timeout),
                     "--mode", ",".join(MODES)]
    baseline_report = None
    if not options.baseline_ref:
        report, figures.seconds = timed_check(library, root, check_options)
    else:
        figures.baseline_ref = short_commit(options.baseline_ref)
        with tree_at(options.baseline_ref) as baseline:
            report, figures.seconds, figures.baseline_seconds, baseline_report = timed_pair(
                library, root, check_options, baseline, options.repeat)
        timed_against(figures, parse_report(report), parse_report(baseline_report))
    if options.keep:
        os.makedirs(options.keep, exist_ok=True)
        with open(os.path.join(options.keep, f"{library.name}.json"), "w") as handle:
            handle.write(report)
        if baseline_report is not None:
            with open(os.path.join(options.keep, f"{library.name}.baseline.json"),
                      "w") as handle:
                handle.write(baseline_report)
        with open(timing_path, "w") as handle:
            json.dump({"seconds": figures.seconds, "baseline_seconds": figures.baseline_seconds,
                       "baseline_ref": figures.baseline_ref}, handle)
    return parse_report(report)


def timed_against(figures: Figures, report: dict[str, Any], baseline: dict[str, Any]) -> None:
    """The verdicts of this tree's and the baseline's reports, and the first verdicts."""
    figures.time.verdicts = verdict_count(report, has_verdict)
    figures.time.baseline_verdicts = verdict_count(baseline, has_verdict)
    figures.time.first_verdicts = first_verdict_files(report, baseline, has_verdict)
    figures.time.kept = kept_verdict_seconds(report, baseline, has_verdict)
    figures.time.otherwise = judged_otherwise(report, baseline, has_verdict)
    figures.lost = lost_verdicts(report, baseline, has_verdict)


def run_library(library: Library, options: argparse.Namespace) -> Figures:
    root = unpacked_root(library, options.corpus_dir)
    figures = Figures(library.name)
    report = fx_lsp_report(library, root, options, figures)
    # With a baseline or without: the verdicts the seconds are over, and the loop of calls.
    figures.time.verdicts = verdict_count(report, has_verdict)
    figures.time.loops = loop_seconds(report)
    figures.time.jobs_loops = jobs_loop_seconds(report)
    classes: dict[str, dict[str, dict]] = collections.defaultdict(dict)
    fx_modules = []
    diagnostics = diagnostic_messages(report)
    errors = error_verdicts(report, has_verdict)
    for module in report["modules"]:
        classes[module["qualified_name"]][module["mode"]] = {
            **absolute_paths(module, root), "relative_path": module["path"]}
        if module["mode"] == "fx" and has_verdict(module):
            fx_modules.append(module)
    by_file: dict[str, list[tuple[str, dict[str, dict]]]] = collections.defaultdict(list)
    measured: dict[str, dict[str, dict]] = {}
    for name, by_mode in classes.items():
        if is_base(by_mode["export"]):
            figures.bases += 1
            continue
        if count_verdicts(figures, by_mode, diagnostics):
            measured[name] = by_mode
        # ``{}``: a forward that takes nothing, run as it is.
        inputs = (by_mode["export"].get("inputs") or {}).get("tensors")
        if inputs is not None:
            by_file[by_mode["export"]["path"]].append((name, by_mode))
    for path, names, package in unimported_files(report, root):
        if package:
            figures.optional[package] += len(names)
            continue
        figures.classes += len(names)
        for mode in MODES:
            figures.without[mode] += len(names)
            figures.causes[mode][IMPORT_FAILED] += len(names)
        figures.reasons[f"all modes: {IMPORT_FAILED}: {path}: {', '.join(names)}"] += 1
    check_fx(figures, root, [module for module in fx_modules
                             if not is_base(classes[module["qualified_name"]]["export"])])
    outcomes: dict[str, dict[str, Any]] = {}
    for members in by_file.values():
        requests = [{"module": by_mode["export"], "compile": by_mode["compile"],
                     "inputs": by_mode["export"]["inputs"]["tensors"]}
                    for _, by_mode in members]
        for (name, by_mode), real in zip(members, real_outcomes(root, requests), strict=True):
            outcomes[name] = real
            judge(figures, name, by_mode, real, {
                mode: diagnostics.get((mode, module["relative_path"], module["class"]), [])
                for mode, module in by_mode.items()})
    judge_false_errors(figures.false_errors, root, measured, outcomes, errors, diagnostics)
    # Classes no arguments build here: real torch builds each from the same arguments.
    unbuilt_by_file: dict[str, list[tuple[str, dict[str, dict], dict[str, str]]]] = \
        collections.defaultdict(list)
    for entry in figures.unbuilt:
        unbuilt_by_file[entry[1]["export"]["path"]].append(entry)
    for entries in unbuilt_by_file.values():
        requests = [{"module": by_mode["export"], "inputs": {}} for _, by_mode, _ in entries]
        for (name, by_mode, causes), real in zip(entries, real_outcomes(root, requests),
                                                 strict=True):
            judge_unbuilt_class(figures, name, by_mode, causes, real, diagnostics)
    return figures


def drawn_library(text: str) -> Library:
    """``DIST==VERSION:FOLDER[,FOLDER...][:wheel]`` as a ``Library`` named by its distribution."""
    release, _, rest = text.partition(":")
    distribution, _, version = release.partition("==")
    folders, _, archive = rest.partition(":")
    if not (distribution and version and folders) or archive not in ("", "wheel", "sdist"):
        raise argparse.ArgumentTypeError(f"not DIST==VERSION:FOLDER[,FOLDER...][:wheel]: {text}")
    return Library(distribution, distribution, version, tuple(folders.split(",")),
                   archive=archive or "sdist")


def share(count: int, total: int) -> str:
    return f"{count} ({100 * count / max(total, 1):.1f}%)"


def table_rows(row: Figures) -> list[list[object]]:
    """A library's rows, one per mode: the shares are of the classes with a forward that do
    not need a missing optional package (those are the column after)."""
    optional = ", ".join(f"{package} {count}" for package, count in row.optional.most_common())
    seconds = f"{row.seconds:.0f}"
    if row.baseline_seconds:
        seconds += (f" ({row.seconds / row.baseline_seconds:.2f}x {row.baseline_ref}'s "
                    f"{row.baseline_seconds:.0f})")
    rows = []
    for mode in MODES:
        agreement = f"{row.agree[mode]}/{row.tried[mode]}"
        if mode == "compile":
            agreement += f" ({row.exact_breaks} exact)"
        rows.append([
            row.name, mode, f"{row.classes} (+{row.bases} bases)",
            share(row.classes - row.without[mode], row.classes),
            share(row.without[mode], row.classes), optional or "0",
            ", ".join(f"{cause} {count}" for cause, count in row.causes[mode].most_common())
            or "-",
            agreement, len(row.own_choices) if mode != "fx" else "-", row.raised.cell(mode),
            seconds, row.time.per_verdict(row.seconds, row.baseline_seconds),
            row.time.kept_classes(), row.time.first(), row.time.loop(), _lost(row),
            row.false_errors.cell(mode)])
    return rows


def _lost(row: Figures) -> str:
    """How many verdicts the baseline had that this tree lost, or "-" without a baseline."""
    return str(len(row.lost)) if row.baseline_ref else "-"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--library", action="append", choices=[lib.name for lib in LIBRARIES])
    # A library drawn from ../shared/libraries/pool.tsv is measured as it is drawn, without
    # naming it in the code (the draw skips the libraries the benchmarks name).
    parser.add_argument("--drawn", action="append", default=[], type=drawn_library,
                        metavar="DIST==VERSION:FOLDER[,FOLDER...][:wheel]",
                        help="also measure this PyPI release's folders (a drawn library)")
    parser.add_argument("--workers", type=int, default=1)
    # EfficientNet-B0 compiles on meta in 20 s on the 2 shared cores (load 8), at the
    # default's limit: a time-out measures the machine, not the class.
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="fx-lsp's seconds per class (default 60)")
    parser.add_argument("--corpus-dir", default=os.path.join(
        os.path.expanduser("~"), ".cache", "fx-lsp-corpus"))
    parser.add_argument("--keep", metavar="DIR", help="keep each library's JSON report there")
    parser.add_argument("--reuse", metavar="DIR",
                        help="read fx-lsp's reports (and seconds) that --keep kept there "
                             "instead of running fx-lsp (the real-torch side runs again)")
    parser.add_argument("--baseline-ref", metavar="COMMIT",
                        help="also time that commit's fx-lsp on the same folders, in this run, "
                             "and print the ratio")
    parser.add_argument("--repeat", type=int, default=1, metavar="N",
                        help="with --baseline-ref: time both N times in turn, this tree first "
                             "then the baseline first (2: ABBA), and keep each one's fastest")
    # The four libraries' figures before that work stay in their own block, which later runs
    # leave alone.
    parser.add_argument("--as-before", action="store_true",
                        help="emit the table as the figures before a change (its own "
                             "block, pt2_library_coverage_before)")
    # Libraries measured on different trees (the first before a later change landed) keep
    # each run's table, with its own provenance line, in a block of its own.
    parser.add_argument("--table", choices=AFTER_TABLES,
                        help="the block the table is written into, for the four libraries "
                             "measured after that work (default pt2_library_coverage)")
    options = parser.parse_args()
    print(f"fx-lsp {engine_version()}, workers={options.workers}")
    rows = [run_library(library, options)
            for library in [*LIBRARIES, *options.drawn]
            if library in options.drawn or not options.library or library.name in options.library]
    table = options.table or ("pt2_library_coverage_before" if options.as_before
                              else "pt2_library_coverage")
    emit(table, markdown(
        ["library", "mode", "classes with a forward", "verdicts", "no verdict",
         "optional package missing (apart)", "no verdict by cause",
         "agrees with real torch (fx: plain torch.fx)", "own-choice FX499/FX502",
         "raises on every input (FX408/FX509); constructor raises here (FX101)",
         "fx-lsp seconds", "seconds per verdict",
         "classes with a verdict at both: capture seconds without the loop of calls "
         "against the baseline's",
         "first verdicts: classes, file seconds",
         "loop of calls (apart): classes, seconds", "verdicts lost since the baseline",
         "error verdicts: run eagerly, FX408/FX509 raise as said, false (target 0); "
         "does not fit: run eagerly (target 0)"],
        [cells for row in rows for cells in table_rows(row)]))
    for row in rows:
        print(f"\n{row.name}: why classes got no verdict")
        for reason, count in row.reasons.most_common():
            print(f"  {count:>4}  {reason}")
        for line in row.own_choices:
            print(f"  OWN CHOICE {line}")
        for line in row.disagreements:
            print(f"  DISAGREES {line}")
        for line in row.false_errors.false_lines:
            print(f"  FALSE ERROR {line}")
        for line in row.false_errors.not_fitting_lines:
            print(f"  DOES NOT FIT, RUNS EAGERLY {line}")
        for line in row.lost:
            print(f"  LOST SINCE {row.baseline_ref} {line}")
        for name, now, then in row.time.over_bound():
            nodes = row.time.otherwise.get(name)
            print(f"  OVER THE BOUND {name}: {now:.2f} s against {then:.2f}" + (
                f" (judged on other arguments or inputs than then: {nodes[0]} nodes "
                f"against {nodes[1]})" if nodes else ""))
        for name, seconds in sorted(row.time.loops.items(), key=lambda item: -item[1]):
            print(f"  LOOP OF CALLS (apart) {name}: {seconds:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
