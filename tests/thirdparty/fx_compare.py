"""The third-party fx fidelity, both sides and their comparison: ``fx-lsp check --format json``
against plain ``torch.fx.symbolic_trace`` on the CPU (``ground_truth.py``), for the tests (a
sample of the workspace's files) and the benchmark (every file,
``benchmarks/fidelity/fx_fidelity.py``).

A class agrees when both give the same verdict; when it traces, the same number of graph
nodes; when it fails, fx-lsp's first failure has the kind of plain torch.fx's exception, and
the innermost third-party frame of that exception (file and line) is among that failure's
frames.
"""

from __future__ import annotations

import ast
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fx_lsp.cli.output_formats.json_report import parse_report

HERE = Path(__file__).resolve().parent
WORKSPACE = HERE / "workspace"
#: Generous: on the loaded 2-core machine the whole workspace takes minutes a side.
RUN_TIMEOUT = float(os.environ.get("FX_LSP_THIRDPARTY_TIMEOUT", "1500"))
#: The library each workspace file's wrappers come from, by the file name's prefix
#: (``decorated.py`` decorates with transformers' ``can_return_tuple`` and plain modules).
LIBRARY_PREFIXES = (("tv_", "torchvision"), ("timm_", "timm"), ("hf_", "transformers"),
                    ("decorated", "transformers"))


def library(key: str) -> str:
    """The library of the class ``file.py:Class``."""
    return next(name for prefix, name in LIBRARY_PREFIXES if key.startswith(prefix))


def wrapper_ids(files: tuple[str, ...] = ()) -> list[str]:
    """``file.py:Class`` of every class defined in the workspace files (found without imports),
    or in the named files (``tpmodels/x.py``) only."""
    paths = [WORKSPACE / name for name in files] or sorted((WORKSPACE / "tpmodels").glob("*.py"))
    return [f"{path.name}:{node.name}"
            for path in paths if not path.name.startswith("_")
            for node in ast.parse(path.read_text(encoding="utf-8")).body
            if isinstance(node, ast.ClassDef) and node.bases]  # nn.Module subclasses


@dataclass
class Runs:
    """Both sides' JSON, and each side's (wall, CPU) seconds, children included."""

    truth: dict[str, Any]
    report: dict[str, Any]
    seconds: dict[str, tuple[float, float]]


def _timed(argv: list[str], ok: tuple[int, ...],
           prints: bool) -> tuple[str, tuple[float, float]]:
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    try:
        completed = subprocess.run(argv, cwd=HERE, env=env, capture_output=True, text=True,
                                   timeout=RUN_TIMEOUT, check=False)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{' '.join(argv)} did not finish in {RUN_TIMEOUT:.0f} s") from None
    wall, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if completed.returncode not in ok or (prints and not completed.stdout.strip()):
        # No report at all is no answer either (a script that died with a traceback).
        raise RuntimeError(f"{' '.join(argv)} exited {completed.returncode}, printing "
                           f"{len(completed.stdout)} characters:\n{completed.stderr[-4000:]}")
    return completed.stdout, (wall, cpu)


def run_both(folder: Path, files: tuple[str, ...] = ()) -> Runs:
    """Plain torch.fx's ground truth and fx-lsp's report of the classes of ``files`` (every
    file when empty), one after the other: on two cores, running both at once slows fx-lsp's
    workers down."""
    out = folder / "ground_truth.json"
    only = ["--only", *(key.split(":")[1] for key in wrapper_ids(files))] if files else []
    _, truth_seconds = _timed([sys.executable, str(HERE / "ground_truth.py"), "--quiet",
                               "--out", str(out), *only], ok=(0,), prints=False)
    paths = [str(WORKSPACE / name) for name in files] or [str(WORKSPACE)]
    # fx-lsp check exits 1 when a class fails: a report all the same.
    printed, lsp_seconds = _timed(
        [sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--format", "json", *paths],
        ok=(0, 1), prints=True)
    return Runs(parse_report(out.read_text(encoding="utf-8")), parse_report(printed),
                {"plain torch.fx": truth_seconds, "fx-lsp check": lsp_seconds})


def pairs(truth: dict, report: dict) -> dict[str, tuple[dict | None, dict | None]]:
    """(ground truth, fx-lsp's module) by ``file.py:Class``, either None where that side has
    no such class."""
    got = {f"{Path(m['path']).name}:{m['class']}": m for m in report["modules"]}
    want = {f"{Path(r['path']).name}:{r['class']}": r for r in truth["modules"]}
    return {key: (want.get(key), got.get(key)) for key in set(want) | set(got)}


def real_path(path: str, base: Path = HERE) -> str:
    """Absolute path: fx-lsp runs in this folder and prints paths under it relative to it."""
    return os.path.realpath(path if os.path.isabs(path) else os.path.join(base, path))


def short(path: str) -> str:
    return path.split("site-packages" + os.sep, 1)[-1]


@dataclass
class Row:
    """One class: each check, None where it does not apply (node count: plain torch.fx does
    not trace it; kind: it traces; frame: its failure has no third-party frame), and the first
    disagreement in words (empty: they agree)."""

    key: str
    real: str
    same_verdict: bool
    same_nodes: bool | None = None
    same_kind: bool | None = None
    frame_found: bool | None = None
    why: str = ""


def compare(key: str, want: dict, got: dict) -> Row:
    """Plain torch.fx's record of one class (``want``) against fx-lsp's module (``got``)."""
    if want["verdict"] == "build-error":
        return Row(key, "build-error", False,
                   why=f"{key}: the model does not build on CPU: {want['message']}")
    if want["verdict"] == "traceable":
        return _traceable(key, want, got)
    row = Row(key, f"failed {want['kind']}", got["status"] == "failed")
    if not row.same_verdict:
        row.why = (f"{key}: plain torch.fx fails ({want['exception']}: {want['message']}), "
                   f"fx-lsp says {got['status']} {got.get('reason') or ''}")
        return row
    first = got["failures"][0]
    frames = [(real_path(f["path"]), f["line"]) for f in first.get("frames", [])]
    third = want["third_party_frame"]
    where = f"{short(third['path'])}:{third['line']}" if third else "no third-party frame"
    row.same_kind = first["kind"] == want["kind"]
    if third is not None:
        row.frame_found = (third["path"], third["line"]) in frames
    if not row.same_kind:
        row.why = (f"{key}: kind {first['kind']!r}, plain torch.fx: {want['kind']!r} "
                   f"({want['exception']}: {want['message'][:120]} at {where}); "
                   f"fx-lsp message: {first['message'][:160]}")
    elif row.frame_found is False:
        row.why = (f"{key}: innermost third-party frame {where} of plain torch.fx "
                   f"({want['exception']}) is not in fx-lsp's frames "
                   f"{[f'{short(p)}:{n}' for p, n in frames]}")
    return row


def _traceable(key: str, want: dict, got: dict) -> Row:
    row = Row(key, f"traceable {want['node_count']} nodes", got["status"] == "traceable")
    if not row.same_verdict:
        first = got["failures"][0] if got["failures"] else {}
        row.why = (f"{key}: plain torch.fx traces it, fx-lsp says {got['status']}: "
                   f"{first.get('kind')} at {first.get('path')}:{first.get('line')}: "
                   f"{first.get('message', got.get('reason'))}")
        return row
    row.same_nodes = got["node_count"] == want["node_count"]
    if not row.same_nodes:
        row.why = (f"{key}: fx-lsp's graph has {got['node_count']} nodes, plain torch.fx's "
                   f"{want['node_count']}")
    return row
