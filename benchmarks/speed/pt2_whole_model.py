"""A whole Llama-2-7B-sized model under fx-lsp's fx, export and compile capture modes, against
plain ``torch.fx.symbolic_trace`` and against real ``torch.export`` / ``torch.compile`` on CPU.

Every figure comes from a fresh process, so each peak RSS belongs to one run:

- fx-lsp: ``fx-lsp check --no-cache --mode M --output-format json`` on a generated workspace
  whose ``llama_model.py`` holds only the ``Llama`` class of ``benchmarks/models/llama.py``
  (its parts are imported from a copy of that file), with ``tokens = "int64[2, 128]"``
  configured in its ``pyproject.toml``. The engine builds it on meta. Printed: the CLI's
  wall clock, the worker's job time (``files[].seconds``: import, build, capture, verdict),
  the capture itself (the class's ``trace_seconds``), and the largest peak RSS (``VmHWM``) of
  a process under the CLI (the forked worker: it shares torch's pages with the zygote),
  sampled from /proc.
- plain torch.fx: a ``python`` process builds the model on meta and runs
  ``torch.fx.symbolic_trace``; its peak RSS is the child's ``ru_maxrss`` from ``wait4``.
- real torch.export / torch.compile: the model built on CPU with real float32 weights, then
  non-strict ``torch.export.export`` on real input tensors, or ``torch.compile`` with a
  backend that records the graphs and returns them uncompiled (as fx-lsp's compile mode
  does), called once under ``no_grad``, so the time includes one eager forward pass.
  These children capture twice: the first pays torch's first-use imports and set-up (which
  fx-lsp's zygote has done once for all its workers), the second ("warm") the capture alone.

The whole 7B (6.74e9 parameters) needs 27 GB in float32, more than such a machine has, so
real export/compile run on a smaller configuration: 2 decoder layers of 7B's dimensions
(vocab 32000, width 4096, 32 heads, SwiGLU 11008; 0.67e9 parameters, 2.7 GB). Each layer is
the same code, so 2 layers exercise every operation of the model, and the configuration still
has 7B's per-layer sizes. fx-lsp captures the same configuration on meta.

    python3 -m benchmarks run speed pt2_whole_model -- [--runs 1] [--small-layers 2]

Nothing is asserted; ratios compare figures measured in this same run.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.paths import MODELS, REPOSITORY
from benchmarks.procfs import children_of, status_kib
from benchmarks.provenance import machine_line
from benchmarks.tables import markdown, record

LLAMA_FILE = os.path.join(MODELS, "llama.py")
BATCH, SEQUENCE = 2, 128
MIB = 1024 * 1024


@dataclass
class Measured:
    """One fresh-process run."""

    wall: float
    #: The capture alone (trace_seconds, or the timed call in the child).
    capture: float
    #: Import + build + capture as the process saw it (the worker's job, or the child's total).
    job: float
    peak_rss_kib: int
    detail: str
    #: A second capture in the same process (plain and real PT2 runs only).
    warm: float | None = None


TIMEOUT_SECONDS = 300


def model_workspace(root: str, layers: int | None) -> str:
    """A workspace whose checked file holds only ``Llama`` (so the other classes of
    llama.py are neither built nor captured); returns that file's path."""
    with open(LLAMA_FILE, encoding="utf-8") as handle:
        text = handle.read()
    tree = ast.parse(text)
    [llama] = [node for node in tree.body if isinstance(node, ast.ClassDef)
               and node.name == "Llama"]
    with open(os.path.join(root, "llama_parts.py"), "w", encoding="utf-8") as handle:
        handle.write(text)
    model_file = os.path.join(root, "llama_model.py")
    with open(model_file, "w", encoding="utf-8") as handle:
        handle.write('"""The Llama class alone; its parts live in llama_parts.py."""\n\n'
                     "from __future__ import annotations\n\nimport torch\nfrom torch import nn\n\n"
                     "from llama_parts import DecoderLayer, RMSNorm, RotaryEmbedding\n\n\n"
                     + ast.get_source_segment(text, llama) + "\n")
    call = f'call = "Llama(n_layers={layers})"\n' if layers is not None else ""
    # A time-out above the default 20 s: on a loaded machine the whole model's export and
    # compile captures take longer, and a time-out would measure the machine, not the capture.
    with open(os.path.join(root, "pyproject.toml"), "w", encoding="utf-8") as handle:
        handle.write(f"[tool.fx-lsp]\ntimeout = {TIMEOUT_SECONDS}\n\n"
                     '[tool.fx-lsp.modules."llama_model:Llama"]\n' + call
                     + f'inputs = {{tokens = "int64[{BATCH}, {SEQUENCE}]"}}\n')
    return model_file


def largest_descendant_hwm(root: int, stop: threading.Event, found: list[int]) -> None:
    """Samples the kernel's peak RSS of every process under ``root`` until ``stop``."""
    while not stop.is_set():
        pending = children_of(root)
        while pending:
            pid = pending.pop()
            found[0] = max(found[0], status_kib(pid, ("VmHWM",)).get("VmHWM", 0))
            pending.extend(children_of(pid))
        stop.wait(0.02)


def run_cli(model_file: str, mode: str) -> Measured:
    command = [sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--mode", mode,
               "--output-format", "json", model_file]
    environment = {**os.environ, "PYTHONPATH": REPOSITORY}
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=environment, cwd=os.path.dirname(model_file))
    stop, found = threading.Event(), [0]
    sampler = threading.Thread(target=largest_descendant_hwm, args=(process.pid, stop, found))
    sampler.start()
    output, errors = process.communicate()
    wall = time.perf_counter() - started
    stop.set()
    sampler.join()
    if process.returncode not in (0, 1):
        raise RuntimeError(f"fx-lsp check --mode {mode} exited {process.returncode}: "
                           f"{errors.decode()[-2000:]}")
    report = json.loads(output)
    [module] = [m for m in report["modules"] if m["class"] == "Llama"]
    [file] = report["files"]
    detail = module["status"] + (f", {module['node_count']} nodes" if module["node_count"] else "")
    if module["status"] == "not-traced":
        detail = f"not-traced: {module['reason']}"
    elif module["failures"]:
        # Which failure: on a loaded machine the whole model's capture can run out of time.
        first = module["failures"][0]
        detail += f": {first['code']} {first['kind']}"
    return Measured(wall, module["trace_seconds"], file["seconds"], found[0], detail)


def run_child(kind: str, layers: int) -> Measured:
    """This script as ``--child KIND`` in a fresh process; its peak RSS from ``wait4``."""
    command = [sys.executable, os.path.abspath(__file__), "--child", kind,
               "--layers", str(layers)]
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE,
                               env={**os.environ, "PYTHONPATH": REPOSITORY})
    assert process.stdout is not None
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)  # reaped here, not by Popen
    if process.returncode != 0:
        raise RuntimeError(f"child {kind} exited {process.returncode}")
    result = json.loads(output)
    return Measured(wall, result["capture"], result["total"], usage.ru_maxrss,
                    result["detail"], result["warm"])


def child(kind: str, layers: int) -> None:
    """One measured capture, printed as JSON: the parent owns the process's peak RSS."""
    started = time.perf_counter()
    import torch

    sys.path.insert(0, os.path.dirname(LLAMA_FILE))
    import llama

    device = "meta" if kind == "plain-fx" else "cpu"
    with torch.device(device):
        model = llama.Llama(n_layers=layers)
    tokens = torch.ones(BATCH, SEQUENCE, dtype=torch.int64)

    def capture() -> str:
        if kind == "plain-fx":
            return f"{len(torch.fx.symbolic_trace(model).graph.nodes)} nodes"
        if kind == "real-export":
            program = torch.export.export(model, (), {"tokens": tokens}, strict=False)
            return f"{len(program.graph.nodes)} nodes"
        graphs: list[torch.fx.GraphModule] = []

        def recording_backend(graph_module: torch.fx.GraphModule, _inputs: object) -> object:
            graphs.append(graph_module)
            return graph_module.forward

        torch._dynamo.reset()  # the second capture compiles again rather than reuse the first
        with torch.no_grad():
            torch.compile(model, backend=recording_backend)(tokens=tokens)
        return f"{len(graphs)} graph(s), {sum(len(g.graph.nodes) for g in graphs)} nodes"

    # The first capture pays torch's first-use imports and set-up (fx-lsp's zygote preloads
    # torch._dynamo for its workers); the second shows the capture alone.
    first_started = time.perf_counter()
    detail = capture()
    first_finished = time.perf_counter()
    capture()
    print(json.dumps({"capture": first_finished - first_started,
                      "warm": time.perf_counter() - first_finished,
                      "total": first_finished - started, "detail": detail}))


def median_run(runs: int, measure: Callable[[], Measured]) -> Measured:
    """The run with the median wall clock; peak RSS is the largest of all runs."""
    measured = sorted((measure() for _ in range(runs)), key=lambda m: m.wall)
    middle = measured[len(measured) // 2]
    middle.peak_rss_kib = max(m.peak_rss_kib for m in measured)
    return middle


def seconds(value: float | None) -> str:
    return f"{value:.2f} s" if value is not None else "-"


def ratio(value: float | None, baseline: float | None) -> str:
    # No capture (a failed one times nothing): no ratio.
    return f"{value / baseline:.1f}x" if value and baseline else "-"


def row(name: str, measured: Measured, baseline: Measured | None) -> list[str]:
    """A table row; its ratios are against ``baseline`` (none for a baseline's own row):
    capture / its first capture, capture / its warm capture, wall / its wall."""
    ratios = "-" if baseline is None else ", ".join(
        ratio(value, versus) for value, versus in (
            (measured.capture, baseline.capture), (measured.capture, baseline.warm),
            (measured.wall, baseline.wall)))
    return [f"{name} {measured.detail}".strip(), seconds(measured.capture),
            seconds(measured.warm), seconds(measured.job), seconds(measured.wall),
            f"{measured.peak_rss_kib / 1024:.0f} MiB", ratios]


class Table:
    """A table printed a row at a time, as each row's fresh processes finish."""

    def __init__(self, name: str, title: str, ratios: str) -> None:
        self.name = name
        self.header = [title, "capture", "warm", "job", "wall", "peak RSS", ratios]
        self.rows: list[list[str]] = []
        print("\n" + markdown(self.header, []), flush=True)

    def add(self, cells: list[str]) -> None:
        self.rows.append(cells)
        print("| " + " | ".join(cells) + " |", flush=True)

    def record(self) -> None:
        record(self.name, markdown(self.header, self.rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--small-layers", type=int, default=2)
    parser.add_argument("--child", choices=("plain-fx", "real-export", "real-compile"),
                        help=argparse.SUPPRESS)
    parser.add_argument("--layers", type=int, default=32, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        child(arguments.child, arguments.layers)
        return
    import torch

    print(f"pt2 whole model: {machine_line()}  torch {torch.__version__}")
    print(f"inputs tokens int64[{BATCH}, {SEQUENCE}]; median of {arguments.runs} fresh "
          "process(es) each; capture = the capture call alone (warm: a second one in the same "
          "process, for plain torch.fx and real PT2), job = import + build + "
          "capture (fx-lsp: the worker's job), wall = the whole fresh process (fx-lsp: the "
          "CLI, with its start-up and the zygote's torch import)")
    small = arguments.small_layers
    with tempfile.TemporaryDirectory() as whole_root, tempfile.TemporaryDirectory() as small_root:
        whole_file = model_workspace(whole_root, None)
        small_file = model_workspace(small_root, small)

        whole = Table("pt2_whole_model", "7B dims, 32 layers, on meta",
                      "capture, vs warm, wall / plain fx's")
        plain = median_run(arguments.runs, lambda: run_child("plain-fx", 32))
        whole.add(row("plain `torch.fx.symbolic_trace`", plain, None))
        for mode in ("fx", "export", "compile"):
            measured = median_run(arguments.runs, lambda mode=mode: run_cli(whole_file, mode))
            whole.add(row(f"fx-lsp `--mode {mode}`", measured, plain))
        whole.record()

        layers = Table("pt2_whole_model_small", f"{small} layers of 7B dims",
                       "fx-lsp / real: capture, vs warm, wall")
        small_plain = median_run(arguments.runs, lambda: run_child("plain-fx", small))
        layers.add(row("plain `torch.fx.symbolic_trace` (meta)", small_plain, None))
        for kind, mode in (("real-export", "export"), ("real-compile", "compile")):
            real = median_run(arguments.runs, lambda kind=kind: run_child(kind, small))
            layers.add(row(f"real `{kind.replace('real-', 'torch.')}` (CPU)", real, None))
            measured = median_run(arguments.runs, lambda mode=mode: run_cli(small_file, mode))
            layers.add(row(f"fx-lsp `--mode {mode}` (meta)", measured, real))
        layers.record()


if __name__ == "__main__":
    main()
