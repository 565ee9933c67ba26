"""Ground truth of the compile-mode fidelity tests: a real ``torch.compile`` run on the CPU.

For every wrapper class that ``fx-lsp check --mode compile --output-format json`` gave example
inputs, build it on the CPU (random init, offline), make real tensors of exactly those input
specs (``torch.ones``, as fx-lsp's capture does, so both runs take the same data-dependent
branches), call ``torch.compile(model, backend=<recording backend>, fullgraph=False)`` after
``torch._dynamo.reset()`` and record:

- ``breaks``: each graph break as ``{"path", "line", "code"}``, read from PyTorch's own
  ``graph_breaks`` logging artefact (``TORCH_LOGS=graph_breaks``), not from fx-lsp's hook:
  "Graph break in user code at FILE:LINE" is the innermost frame of the break and the last page
  it links (``.../gb/gb0124.html``) is its ``GBnnnn`` code (``None`` for a type outside
  PyTorch's registry, fx-lsp's FX501): a break raised while dynamo handled an earlier one (a
  "graph break in loop", GB7000) prints the earlier one's message and page first, then its
  own. One entry per (path, line, code), as fx-lsp reports them. A break dynamo logs inside
  the standard library (``copy.py`` under a library's ``copy.deepcopy`` of its config) or
  inside dynamo's own Python stand-ins for builtins (``torch/_dynamo/polyfills/builtins.py``
  under a user's ``all(...)`` over a tensor) is placed, as fx-lsp places every frame
  (``fxcore.worker.source.locate.is_plumbing``), at the innermost frame of the break's user
  traceback outside them; ``logged_at`` keeps where dynamo logged it.
- ``graph_count``: the graphs the recording backend received;
- ``error``: type, first line and innermost user frame (``path``, ``line``: dynamo's
  ``real_stack``, when it attached one) of an exception the compiled call raised (fx-lsp's
  FX502);
- ``verdict``: ``breaks``, ``whole`` (no break, no error), ``error`` or ``build-error``.

Each in the ``nn.Module`` mode fx-lsp compiled it in (``compiled_modes``: its JSON's
``module_modes`` and ``graph_counts``): a class fx-lsp compiled in train and in eval mode gets
a row per mode, each with its ``module_mode``.

Paths are the workspace-relative path (``tpmodels/x.py``) or ``<site-packages>/...``, the
way fx-lsp's JSON prints them when it runs in the workspace folder.

Usage: ``python tests/thirdparty/compile_ground_truth.py --report FX_LSP_JSON [--out FILE]
[--only CLASS...]``.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import re
import sys
import sysconfig
import time
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
WORKSPACE = HERE / "workspace"
PACKAGE = "tpmodels"
#: ``float32[2, 3, 224, 224]``: a tensor spec as fx-lsp's JSON prints it.
_SPEC = re.compile(r"^(\w+)\[([\d,\s]*)\]$")
#: A tensor spec inside a container's spelling.
_SPEC_INSIDE = re.compile(r"\w+\s*\[[\d,\s]*\]")
_WHERE = re.compile(r"^Graph break in user code at (.+):(\d+)$", re.MULTILINE)
_PAGE = re.compile(r"/gb/gb(\d+)\.html")
#: A frame of the "User code traceback:" of a break's message (``traceback.format_list``).
_FRAME = re.compile(r'^  File "(.+)", line (\d+), in ', re.MULTILINE)
_STDLIB = os.path.realpath(sysconfig.get_paths()["stdlib"]) + os.sep
#: Between a break and the one raised while dynamo handled it, in a break's message.
_CHAINED = "*** While handling this graph break, another graph break occurred: ***"
SITE_PACKAGES = "site-packages" + os.sep


def display_path(path: str, workspace: Path = WORKSPACE) -> str:
    """``tpmodels/x.py`` for a workspace file, ``<site-packages>/...`` for an installed one."""
    real = os.path.realpath(path)
    root = os.path.realpath(workspace) + os.sep
    if real.startswith(root):
        return real[len(root):]
    if SITE_PACKAGES in real:
        return "<site-packages>/" + real.split(SITE_PACKAGES, 1)[1]
    return real


def parse_break(message: str) -> dict[str, Any] | None:
    """One ``graph_breaks`` log record as ``{"path", "line", "code", "reason"}``."""
    where = _WHERE.search(message)
    if where is None:
        return None
    # The break logged is the last of the chain the message prints (GB7000 "graph break in
    # loop" after the break in the loop that caused it), as its exception's ``gb_type`` says.
    pages = _PAGE.findall(message)
    last = message.rsplit(_CHAINED, 1)[1] if _CHAINED in message else message
    reason = last.split("\n\n", 2)[1].strip().splitlines()[0] if "\n\n" in last else ""
    path, line = where.group(1), int(where.group(2))
    found = {"code": f"GB{pages[-1]}" if pages else None, "reason": reason[:200]}
    if _below_the_user(path):
        traceback_text = message[where.end():].split("User code traceback:", 1)[-1]
        outside = [(frame, int(number)) for frame, number in _FRAME.findall(traceback_text)
                   if not _below_the_user(frame)]
        if outside:
            found["logged_at"] = f"{display_path(path)}:{line}"
            path, line = outside[-1]
    return {"path": display_path(path), "line": line, **found}


def _below_the_user(path: str) -> bool:
    """The standard library's frames and dynamo's polyfills: code the user's line called
    into, which no user edits."""
    import torch._dynamo.polyfills

    real = os.path.realpath(path)
    polyfills = os.path.realpath(os.path.dirname(torch._dynamo.polyfills.__file__)) + os.sep
    return real.startswith(polyfills) or (
        real.startswith(_STDLIB) and SITE_PACKAGES not in real)


class _BreakLog(logging.Handler):
    """Collects the messages of PyTorch's ``graph_breaks`` artefact logger."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _break_logger() -> logging.Logger:
    """The ``graph_breaks`` artefact logger, enabled, kept off the terminal."""
    import torch

    torch._logging.set_logs(graph_breaks=True)
    logger = torch._logging.getArtifactLogger("torch._dynamo.symbolic_convert", "graph_breaks")
    logger.propagate = False
    return logger


def example_tensors(specs: dict[str, str]) -> dict[str, Any]:
    """Tensors of ones for ``specs``; a dict, list or tuple of specs (``{'p3': float32[2, 8,
    32, 32]}``) gives that container of them."""
    return {name: _example_value(name, spec) for name, spec in specs.items()}


def _example_value(name: str, spec: str) -> Any:
    import ast

    import torch

    if spec.strip()[:1] in ("{", "[", "("):
        container = ast.literal_eval(_SPEC_INSIDE.sub(lambda m: repr(m.group(0)), spec))
        if isinstance(container, dict):
            return {key: _example_value(name, item) for key, item in container.items()}
        made = [_example_value(name, item) for item in container]
        return made if isinstance(container, list) else tuple(made)
    match = _SPEC.match(spec.replace(" ", ""))
    if match is None:
        raise ValueError(f"unreadable tensor spec {name}: {spec!r}")
    shape = [int(d) for d in match.group(2).split(",") if d]
    return torch.ones(shape, dtype=getattr(torch, match.group(1)))


def compile_once(model: Any, inputs: dict[str, Any]) -> dict[str, Any]:
    """One real ``torch.compile`` run: its breaks, graph count and error."""
    import torch

    logger = _break_logger()
    log = _BreakLog()
    logger.addHandler(log)
    graphs: list[Any] = []

    def recording_backend(graph_module: Any, _inputs: Any) -> Any:
        graphs.append(graph_module)
        return graph_module.forward

    torch._dynamo.reset()
    error = None
    try:
        with torch.no_grad():
            torch.compile(model, backend=recording_backend, fullgraph=False)(**inputs)
    except Exception as exc:  # a compile error is a finding (FX502)
        # The first line, and the whole text: dynamo wraps an operation's own error (a shape
        # mismatch) in "RuntimeError when making fake tensor call", quoting it further on.
        error = {"exception": type(exc).__name__,
                 "message": (str(exc).strip().splitlines() or [""])[0][:300],
                 "text": str(exc)[:4000]}
        # The user stack dynamo attaches to the error (fx-lsp's FX502 frames are the same).
        stack = getattr(exc, "real_stack", None)
        if stack:
            error.update(path=display_path(stack[-1].filename), line=stack[-1].lineno)
    finally:
        logger.removeHandler(log)
    torch._dynamo.reset()
    breaks, seen = [], set()
    for message in log.messages:
        parsed = parse_break(message)
        if parsed is None:
            continue
        key = (parsed["path"], parsed["line"], parsed["code"])
        if key not in seen:
            seen.add(key)
            breaks.append(parsed)
    verdict = "error" if error else ("breaks" if breaks else "whole")
    return {"verdict": verdict, "breaks": breaks, "graph_count": len(graphs), "error": error}


def compiled_modes(module: dict) -> list[str]:
    """The ``nn.Module`` modes fx-lsp compiled a JSON module in: each with a graph count when
    it compiled it in several, else the one its verdict was made in (train, as built, when it
    holds for both because no code beside torch's own layers reads ``training``)."""
    counts = module.get("graph_counts") or {}
    if counts:
        return list(counts)
    modes = module.get("module_modes") or ["train"]
    return ["train"] if len(modes) > 1 else modes


def targets(report: dict, only: list[str] | None = None) -> list[dict]:
    """The compile-mode modules of fx-lsp's JSON that have example inputs."""
    return [m for m in report["modules"]
            if m.get("mode", "compile") == "compile" and (m.get("inputs") or {}).get("tensors")
            and (not only or m["class"] in only)]


def collect(report: dict, only: list[str] | None = None) -> list[dict]:
    sys.path.insert(0, str(WORKSPACE))
    importlib.import_module(PACKAGE)  # the shim and the offline variables first

    rows = []
    for module in targets(report, only):
        path = display_path(module["path"] if os.path.isabs(module["path"])
                            else str(WORKSPACE / module["path"]))
        row: dict[str, Any] = {"path": path, "class": module["class"],
                               "inputs": module["inputs"]["tensors"]}
        cls = getattr(importlib.import_module(f"{PACKAGE}.{Path(path).stem}"), module["class"])
        for mode in compiled_modes(module):
            rows.append(_compiled_in(cls, mode, dict(row, module_mode=mode)))
    return rows


def _compiled_in(cls: type, mode: str, row: dict[str, Any]) -> dict[str, Any]:
    """``row`` with the real run of a new instance of ``cls`` in ``mode``."""
    import torch

    torch.manual_seed(0)
    started = time.perf_counter()
    try:
        model = cls()
    except Exception as exc:
        row.update(verdict="build-error", breaks=[], graph_count=0,
                   error={"exception": type(exc).__name__, "message": str(exc)[:300]})
        return row
    model.train(mode == "train")
    row.update(compile_once(model, example_tensors(row["inputs"])))
    row["seconds"] = round(time.perf_counter() - started, 2)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--report", required=True,
                        help="fx-lsp check --mode compile --output-format json of the workspace")
    parser.add_argument("--out", required=True)
    parser.add_argument("--only", nargs="*", help="class names (default: all)")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    started = time.perf_counter()
    rows = collect(json.loads(Path(args.report).read_text()), args.only)
    import torch

    doc = {"torch": torch.__version__, "seconds": round(time.perf_counter() - started, 1),
           "modules": rows}
    Path(args.out).write_text(json.dumps(doc, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
