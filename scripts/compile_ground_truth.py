"""Ground truth of the compile-mode fidelity corpus (tests/corpus/compile/*.py): each class
compiled with a recording backend on CPU with REAL tensors (float32[2, 8] from
``torch.rand``, seed 0), its graph breaks as the set of (line, GB code) in the corpus file
and the number of graphs, printed as JSON.

A class whose compiled call raises gets the code "error". The classes of a file that names
``nn.Module`` modes in ``MODULE_MODES`` (``("train", "eval")``) also get each mode's breaks and
graphs under ``modes``: compiled after ``model.train()`` / ``model.eval()``, as fx-lsp's
``module-mode`` judges them. fx-lsp's compile capture runs the
same classes on meta tensors; tests/fxcore/worker/capture/compile/test_compile_capture.py
compares the two, computing this in the same run on the installed torch
(tests/support/real_torch_answers.py), never from a record.

    python3 scripts/compile_ground_truth.py
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import inspect
import io
import json
import os
import sys
import time
import warnings
from collections.abc import Collection
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from torch import nn
from torch._dynamo.symbolic_convert import InstructionTranslatorBase

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "corpus" / "compile"
INPUT_SHAPE = (2, 8)


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"compile_corpus_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def corpus_classes(path: Path) -> dict[str, type[nn.Module]]:
    """The ``nn.Module`` classes the corpus file defines, by name, in source order."""
    module = _load(path)
    classes = [value for value in vars(module).values()
               if inspect.isclass(value) and issubclass(value, nn.Module)
               and value.__module__ == module.__name__]
    classes.sort(key=lambda cls: cls.forward.__code__.co_firstlineno)
    return {cls.__name__: cls for cls in classes}


#: torch's graph-break registry (type -> GBnnnn), read from the file torch ships.
_REGISTRY_FILE = Path(torch.__file__).parent / "_dynamo" / "graph_break_registry.json"


def _registry_codes() -> dict[str, str]:
    try:
        registry = json.loads(_REGISTRY_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(entry.get("Gb_type")): code for code, entries in registry.items()
            for entry in entries if isinstance(entry, dict)}


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0].strip() if text.strip() else ""


def _logged_break(arguments: dict[str, Any]) -> tuple[Any, str, Any] | None:
    """(exception or None, break type, user stack) of one ``log_graph_break`` call, whichever
    signature this torch's has: ``(code_options, reason, exc)`` from 2.11 on;
    ``(code_options, reason, user_stack)`` in 2.10, called in the ``except`` of the break
    (whose type is its message's first line) or, for a data-dependent jump, with the message
    alone. None for a break already logged."""
    reason = str(arguments.get("reason") or "")
    exc = arguments.get("exc")
    if exc is None:
        in_flight = sys.exc_info()[1]
        if in_flight is not None and str(in_flight) and str(in_flight) in reason:
            exc = in_flight
    if exc is not None:
        if getattr(exc, "logged", False):
            return None
        return exc, getattr(exc, "gb_type", None) or _first_line(str(exc)), exc.real_stack
    # Where torch itself takes the stack from when it is given none.
    stack = arguments.get("user_stack") or torch._guards.TracingContext.extract_stack()
    return None, _first_line(reason), stack


def compile_on_cpu(cls: type[nn.Module], path: Path, mode: str = "train",
                   device: str = "cpu", backend: str = "record",
                   timed: bool = False) -> dict[str, Any]:
    """The breaks (line in ``path``, code) and graph count of one real-tensor run, the model
    in ``mode`` ("train": as built), on ``device`` (the GPU tier passes ``cuda``), with the
    recording backend or a real one (``inductor``, whose graphs are counted from dynamo's own
    statistics); ``timed``: with the seconds of that first, cold call."""
    torch.manual_seed(0)
    model = cls()
    model.train(mode == "train")
    model = model.to(device)
    graphs: list[torch.fx.GraphModule] = []
    breaks: set[tuple[int, str]] = set()
    codes = _registry_codes()
    original = InstructionTranslatorBase.log_graph_break
    signature = inspect.signature(original)

    def log_graph_break(self: Any, *args: Any, **kwargs: Any) -> None:
        bound = signature.bind(self, *args, **kwargs)
        logged = _logged_break(bound.arguments)
        if logged is not None:
            _, gb_type, stack = logged
            lines = [frame.lineno for frame in stack
                     if os.path.abspath(frame.filename) == str(path)]
            breaks.add((lines[-1] if lines else 0, codes.get(gb_type, "FX501")))
        return original(self, *args, **kwargs)

    def record(graph_module: torch.fx.GraphModule, _inputs: Any) -> Any:
        graphs.append(graph_module)
        return graph_module.forward

    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    started = time.perf_counter()  # a cold compile: what a user waits for the first call
    InstructionTranslatorBase.log_graph_break = log_graph_break
    try:
        with torch.no_grad():
            torch.compile(model, backend=record if backend == "record" else backend,
                          fullgraph=False)(torch.rand(INPUT_SHAPE, device=device))
    except Exception as error:  # a compile error where eager may run: its own finding
        lines = [frame.lineno for frame in getattr(error, "real_stack", None) or ()
                 if os.path.abspath(frame.filename) == str(path)]
        breaks.add((lines[-1] if lines else 0, "error"))
    finally:
        InstructionTranslatorBase.log_graph_break = original
    count = len(graphs) if backend == "record" else \
        torch._dynamo.utils.counters["stats"]["unique_graphs"]
    answer: dict[str, Any] = {"breaks": sorted([line, code] for line, code in breaks),
                              "graphs": count}
    if timed:
        answer["seconds"] = round(time.perf_counter() - started, 3)
    return answer


def ground_truth(corpus: Path = CORPUS, device: str = "cpu", backend: str = "record",
                 timed: bool = False, only: Collection[str] | None = None
                 ) -> dict[str, dict[str, Any]]:
    """Real torch.compile's answers for the corpus's classes (``file.py:Class``), or for
    ``only`` those (a test run's shard asks for the classes it compares)."""
    truth: dict[str, dict[str, Any]] = {}
    for path in sorted(corpus.glob("*.py")):
        if only is not None and not any(key.startswith(f"{path.name}:") for key in only):
            continue
        modes = getattr(_load(path), "MODULE_MODES", ())
        for name, cls in corpus_classes(path).items():
            if only is not None and f"{path.name}:{name}" not in only:
                continue
            truth[f"{path.name}:{name}"] = compile_on_cpu(cls, path, "train", device, backend,
                                                          timed)
            if modes:
                truth[f"{path.name}:{name}"]["modes"] = {
                    mode: compile_on_cpu(cls, path, mode, device, backend, timed)
                    for mode in modes}
    return truth


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--device", default="cpu", help="cpu, or cuda on a GPU machine")
    parser.add_argument("--backend", default="record",
                        help="record (the graphs, uncompiled), or a real one: inductor")
    parser.add_argument("--seconds", action="store_true",
                        help="give each class's seconds to its first (cold) compiled call")
    arguments = parser.parse_args()
    warnings.simplefilter("ignore")
    with contextlib.redirect_stdout(io.StringIO()):  # the corpus prints, on purpose
        truth = ground_truth(arguments.corpus.resolve(), arguments.device, arguments.backend,
                             arguments.seconds)
    print(json.dumps(truth, indent=1))


if __name__ == "__main__":
    main()
