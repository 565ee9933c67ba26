"""Ground truth for the third-party fidelity tests: plain ``torch.fx.symbolic_trace``.

For every wrapper module of ``tests/thirdparty/workspace`` (every ``nn.Module`` subclass defined
in a ``tpmodels`` file whose ``forward`` is not ``nn.Module``'s own), build it on the CPU, run
plain ``torch.fx.symbolic_trace`` on it and record:

- ``verdict``: ``traceable`` or ``failed`` (``build-error`` when the constructor raises);
- ``exception`` (type name) and ``message`` (first line);
- ``kind``: what fx-lsp should call the failure (control-flow, len, iteration, conversion,
  mutation, contains, unpacking, einops, error), derived from the exception and, for iteration
  errors, from the expression at the failing position (``x in proxy`` is ``contains``,
  ``f(*proxy)`` is ``unpacking``); ``einops`` whatever the exception when a frame below the
  workspace's innermost one is in the einops or einx package;
- ``third_party_frame``: the innermost frame of the traceback that lies in a third-party
  library: not torch (its ``torch.fx`` and ``nn.Module.__call__`` plumbing), not the standard
  library, not the workspace itself. ``None`` when there is none (for instance
  "co_varnames is too small", raised inside torch.fx).

Usage: ``python tests/thirdparty/ground_truth.py [--out FILE] [--only NAME...]`` prints a table
and writes JSON (default: ``tests/thirdparty/ground_truth.json``, not kept in git: the tests
compute it in their own run, tests/thirdparty/conftest.py).
"""

from __future__ import annotations

import argparse
import ast
import importlib
import inspect
import json
import os
import sys
import sysconfig
import time
import traceback
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKSPACE = HERE / "workspace"
PACKAGE = "tpmodels"
DEFAULT_OUT = HERE / "ground_truth.json"


def workspace_files(workspace: Path = WORKSPACE) -> list[Path]:
    """The wrapper files, in a stable order (the shim and ``__init__`` hold no models)."""
    return sorted(p for p in (workspace / PACKAGE).glob("*.py") if not p.name.startswith("_"))


def _real(path: str) -> str:
    return os.path.realpath(path)


def _site_paths() -> list[str]:
    import site

    paths = list(site.getsitepackages())
    user = site.getusersitepackages()
    if isinstance(user, str):
        paths.append(user)
    return [_real(p) + os.sep for p in paths]


def frame_category(filename: str, workspace: Path = WORKSPACE) -> str:
    """``torch``, ``stdlib``, ``workspace``, ``third-party`` or ``other`` for a frame's file."""
    import torch

    if filename.startswith("<"):  # code made from a string (``<string>``): no file, not
        return "stdlib"            # the workspace's, whatever folder it resolves under
    path = _real(filename)
    torch_dir = _real(os.path.dirname(torch.__file__)) + os.sep
    if path.startswith(torch_dir):
        return "torch"
    if path.startswith(_real(str(workspace)) + os.sep):
        return "workspace"
    if any(path.startswith(s) for s in _site_paths()):
        return "third-party"
    stdlib = {_real(sysconfig.get_paths()[k]) + os.sep for k in ("stdlib", "platstdlib")}
    if any(path.startswith(s) for s in stdlib):
        return "stdlib"
    return "other"


#: Packages whose frames below the workspace's make a failure fx-lsp's ``einops`` (FX008).
TRACED_LIBRARIES = frozenset({"einops", "einx"})


def in_traced_library(frames: list[traceback.FrameSummary], categories: list[str]) -> bool:
    """A frame after the innermost workspace frame lies in an einops or einx package."""
    below = max((i for i, c in enumerate(categories) if c == "workspace"), default=-1)
    for frame, category in zip(frames[below + 1:], categories[below + 1:], strict=True):
        path = _real(frame.filename)
        if category == "third-party" and any(
                path.startswith(site) and path[len(site):].split(os.sep)[0] in TRACED_LIBRARIES
                for site in _site_paths()):
            return True
    return False


def _node_at(filename: str, frame: traceback.FrameSummary) -> ast.AST | None:
    """The smallest AST node that covers the frame's position (3.11+ positions)."""
    try:
        source = Path(filename).read_text(encoding="utf-8")
        tree = ast.parse(source)
    except (OSError, SyntaxError, ValueError):
        return None
    lineno = frame.lineno
    end_lineno = getattr(frame, "end_lineno", None) or lineno
    col = getattr(frame, "colno", None)
    end_col = getattr(frame, "end_colno", None)
    best = None
    best_size = None
    for node in ast.walk(tree):
        if not hasattr(node, "lineno") or not hasattr(node, "end_lineno"):
            continue
        start = (node.lineno, node.col_offset)
        end = (node.end_lineno, node.end_col_offset)
        if col is None or end_col is None:
            ok = node.lineno <= lineno <= node.end_lineno
        else:
            ok = start <= (lineno, col) and (end_lineno, end_col) <= end
        if not ok:
            continue
        size = (node.end_lineno - node.lineno, node.end_col_offset - node.col_offset)
        if best is None or size < best_size:
            best, best_size = node, size
    return best


def classify(exc: BaseException, innermost: traceback.FrameSummary | None) -> str:
    """The fx-lsp kind of a plain torch.fx failure."""
    msg = str(exc)
    name = type(exc).__name__
    if "cannot be used as inputs to control flow" in msg:
        return "control-flow"
    if "'len' is not supported in symbolic tracing" in msg:
        return "len"
    if "Proxy object cannot be iterated" in msg:
        node = _node_at(innermost.filename, innermost) if innermost else None
        if isinstance(node, ast.Compare) and any(
            isinstance(op, (ast.In, ast.NotIn)) for op in node.ops
        ):
            return "contains"
        if isinstance(node, ast.Call) and (
            any(isinstance(a, ast.Starred) for a in node.args)
            or any(k.arg is None for k in node.keywords)
        ):
            return "unpacking"
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)) and any(
            isinstance(e, ast.Starred) for e in node.elts
        ):
            return "unpacking"  # (*proxy, 1): star-unpacking in a display
        if isinstance(node, ast.Dict) and any(k is None for k in node.keys):
            return "unpacking"  # {**proxy}
        return "iteration"
    if name == "TypeError" and "'Proxy' object does not support item assignment" in msg:
        return "mutation"
    if name == "TypeError" and (
        "not 'Proxy'" in msg
        or "'Proxy' object cannot be interpreted as an integer" in msg
        or "must be real number, not Proxy" in msg
        or "slice indices must be integers" in msg
    ):
        return "conversion"
    return "error"


def _frame_dict(frame: traceback.FrameSummary) -> dict:
    return {
        "path": _real(frame.filename),
        "line": frame.lineno,
        "end_line": getattr(frame, "end_lineno", None),
        "colno": getattr(frame, "colno", None),
        "end_colno": getattr(frame, "end_colno", None),
        "function": frame.name,
    }


def analyse_exception(exc: BaseException, workspace: Path = WORKSPACE) -> dict:
    frames = traceback.extract_tb(exc.__traceback__)
    cats = [frame_category(f.filename, workspace) for f in frames]
    user = [f for f, c in zip(frames, cats, strict=True) if c in ("workspace", "third-party")]
    third = [f for f, c in zip(frames, cats, strict=True) if c == "third-party"]
    ws = [f for f, c in zip(frames, cats, strict=True) if c == "workspace"]
    innermost = user[-1] if user else None
    return {
        "exception": type(exc).__name__,
        "message": (str(exc).strip().splitlines() or [""])[0][:300],
        "kind": "einops" if in_traced_library(list(frames), cats) else classify(exc, innermost),
        "third_party_frame": _frame_dict(third[-1]) if third else None,
        "workspace_frame": _frame_dict(ws[-1]) if ws else None,
        "innermost_frame": _frame_dict(innermost) if innermost else None,
    }


def wrapper_classes(module) -> list[type]:
    import torch

    out = []
    for _, cls in inspect.getmembers(module, inspect.isclass):
        if cls.__module__ != module.__name__ or not issubclass(cls, torch.nn.Module):
            continue
        if getattr(cls, "forward", None) is torch.nn.Module.forward:
            continue
        out.append(cls)
    return sorted(out, key=lambda c: inspect.getsourcelines(c)[1])


def _class_names(path: Path) -> set[str]:
    return {node.name for node in ast.parse(path.read_text(encoding="utf-8")).body
            if isinstance(node, ast.ClassDef)}


def collect(only: list[str] | None = None, workspace: Path = WORKSPACE) -> list[dict]:
    sys.path.insert(0, str(workspace))
    importlib.import_module(PACKAGE)  # the shim and the offline variables first
    import torch.fx

    from fxcore.worker.running.seeding import seed_generators

    rows = []
    for path in workspace_files(workspace):
        if only and not set(only) & _class_names(path):
            continue  # none of the classes asked for: its imports (seconds each) are not paid
        modname = f"{PACKAGE}.{path.stem}"
        try:
            module = importlib.import_module(modname)
        except Exception as exc:  # an import error is a finding of its own
            rows.append(
                {
                    "path": str(path),
                    "class": None,
                    "verdict": "import-error",
                    **analyse_exception(exc, workspace),
                }
            )
            continue
        for cls in wrapper_classes(module):
            if only and cls.__name__ not in only:
                continue
            row = {
                "path": _real(str(path)),
                "module": modname,
                "class": cls.__name__,
                "line": inspect.getsourcelines(cls)[1],
            }
            t0 = time.perf_counter()
            # Seeded as fx-lsp's worker seeds, before the build and before the trace: a
            # forward that draws from `random` traces down the outcome fx-lsp's did.
            seed_generators()
            try:
                model = cls()
            except Exception as exc:
                row.update(verdict="build-error", **analyse_exception(exc, workspace))
                rows.append(row)
                continue
            t1 = time.perf_counter()
            seed_generators()
            try:
                gm = torch.fx.symbolic_trace(model)
            except Exception as exc:
                row.update(verdict="failed", **analyse_exception(exc, workspace))
            else:
                row.update(verdict="traceable", node_count=len(gm.graph.nodes))
            row["build_seconds"] = round(t1 - t0, 3)
            row["trace_seconds"] = round(time.perf_counter() - t1, 3)
            rows.append(row)
            del model
    return rows


def _short(path: str | None) -> str:
    if not path:
        return "-"
    for marker in ("site-packages" + os.sep, str(WORKSPACE) + os.sep):
        if marker in path:
            return path.split(marker, 1)[1]
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    ap.add_argument("--only", nargs="*",
                    help="class names to collect (default: all); files without any are not "
                    "imported")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    t0 = time.perf_counter()
    rows = collect(args.only)
    elapsed = time.perf_counter() - t0
    import torch

    versions = {"torch": torch.__version__}
    for lib in ("torchvision", "timm", "transformers"):
        try:
            versions[lib] = importlib.import_module(lib).__version__
        except Exception:  # pragma: no cover - reported, not fatal
            versions[lib] = None
    from tpmodels import _shim

    doc = {
        "versions": versions,
        "torchvision_ops": _shim.status,
        "seconds": round(elapsed, 1),
        "modules": rows,
    }
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    if not args.quiet:
        for r in rows:
            frame = r.get("third_party_frame")
            where = f"{_short(frame['path'])}:{frame['line']}" if frame else "-"
            print(
                f"{r['module'].split('.')[-1]:20} {r['class'] or '-':24} {r['verdict']:10} "
                f"{r.get('kind', ''):13} {where}"
            )
        counts: dict[str, int] = {}
        for r in rows:
            counts[r["verdict"]] = counts.get(r["verdict"], 0) + 1
        print(f"{len(rows)} modules in {elapsed:.1f} s: {counts}; written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
