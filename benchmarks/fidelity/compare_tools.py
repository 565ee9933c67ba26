"""What plain ``torch.fx.symbolic_trace``, ``torch._dynamo.explain`` and ``fx-lsp check`` each
report on the same three failing models, one per library, and how long each takes.

The models are user wrapper modules in a temporary workspace (a package whose ``__init__``
imports the torchvision shim of ``tests/thirdparty`` first, as the fidelity-test workspace
does), each building a real library model without weights and calling it in ``forward``:

- torchvision ``ssdlite320_mobilenet_v3_large`` in training mode, ``forward(images, targets)``
  (fails on iteration over ``targets``). A detection model whose training step runs no
  torchvision C++ operator: ``torch._dynamo.explain`` runs the model for real, and next to
  the CPU torch those operators (``nms``, ``roi_align``, used by the R-CNN models) have no
  kernel here.
- timm ``tf_efficientnet_b0`` (its "same" padding fails on control flow inside ``max()``).
- transformers ``GPT2Model`` with a tiny config (fails in ``masking_utils``).

Each tool runs in a fresh process per model, so every wall time covers the same things:
interpreter start, importing torch and the library, building the model, analysing it.
Plain torch.fx and dynamo build the model on the CPU (dynamo executes it; plain tracing is
what a user would run); fx-lsp builds it on the meta device in its worker. The time of the
analysis call alone is printed too: ``symbolic_trace``, ``explain(model)(*inputs)``, and
fx-lsp's ``trace_seconds`` for the class (the recovering trace only).

Printed, never asserted.

    python3 -m benchmarks run fidelity compare_tools -- [--repetitions 2]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
from dataclasses import dataclass
from typing import Any

from benchmarks.paths import TORCHVISION_SHIM, child_environment
from benchmarks.provenance import engine_version, machine_line
from benchmarks.tables import emit, markdown

PACKAGE = "cmpmodels"


@dataclass(frozen=True)
class ModelSpec:
    name: str
    library: str
    module: str
    class_name: str
    source: str


MODELS: list[ModelSpec] = [
    ModelSpec("SSDlite320 (train)", "torchvision", "tv_ssdlite", "TvSSDLite", '''
        from torch import nn
        from torchvision.models import detection


        class TvSSDLite(nn.Module):
            """Training mode (the default): ``forward(images, targets)``."""

            def __init__(self):
                super().__init__()
                self.model = detection.ssdlite320_mobilenet_v3_large(
                    weights=None, weights_backbone=None, num_classes=3
                )

            def forward(self, images, targets):
                return self.model(images, targets)
    '''),
    ModelSpec("tf_efficientnet_b0", "timm", "timm_tf_efficientnet", "TimmTfEfficientNetB0", '''
        import timm
        from torch import nn


        class TimmTfEfficientNetB0(nn.Module):
            def __init__(self):
                super().__init__()
                self.model = timm.create_model("tf_efficientnet_b0", pretrained=False,
                                               num_classes=10)

            def forward(self, x):
                return self.model(x)
    '''),
    ModelSpec("GPT2Model (tiny)", "transformers", "hf_gpt2", "HfTinyGPT2", '''
        from torch import nn
        from transformers import GPT2Config, GPT2Model


        class HfTinyGPT2(nn.Module):
            def __init__(self):
                super().__init__()
                self.model = GPT2Model(GPT2Config(vocab_size=99, n_embd=32, n_layer=2,
                                                  n_head=2, n_positions=64))

            def forward(self, input_ids):
                return self.model(input_ids).last_hidden_state
    '''),
]


TOOLS = ("torch.fx.symbolic_trace", "torch._dynamo.explain", "fx-lsp check")


def example_inputs(module: str) -> tuple[Any, ...]:
    """Real inputs for dynamo, which runs the model (inside the child process)."""
    import torch

    torch.manual_seed(0)
    if module == "tv_ssdlite":
        images = [torch.rand(3, 320, 320), torch.rand(3, 300, 280)]
        targets = [{"boxes": torch.tensor([[10.0, 20.0, 120.0, 160.0]]),
                    "labels": torch.tensor([1])},
                   {"boxes": torch.tensor([[30.0, 40.0, 200.0, 210.0],
                                           [5.0, 5.0, 60.0, 90.0]]),
                    "labels": torch.tensor([2, 1])}]
        return images, targets
    if module == "timm_tf_efficientnet":
        return (torch.rand(1, 3, 128, 128),)
    return (torch.randint(0, 99, (1, 12)),)


def build_workspace(folder: str) -> None:
    package = os.path.join(folder, PACKAGE)
    os.makedirs(package)
    with open(os.path.join(folder, "pyproject.toml"), "w", encoding="utf-8") as handle:
        handle.write('[project]\nname = "compare-tools"\nversion = "0"\n')
    shutil.copyfile(TORCHVISION_SHIM, os.path.join(package, "_shim.py"))
    with open(os.path.join(package, "__init__.py"), "w", encoding="utf-8") as handle:
        handle.write("from . import _shim  # noqa: F401  (before any torchvision import)\n")
    for spec in MODELS:
        with open(os.path.join(package, f"{spec.module}.py"), "w", encoding="utf-8") as handle:
            handle.write(textwrap.dedent(spec.source).lstrip())


# -- inside a child process: one tool on one model --------------------------------------------


def short_path(path: str, workspace: str) -> str:
    """site-packages/x/y.py -> x/y.py; workspace files relative to the workspace."""
    if "site-packages" + os.sep in path:
        return path.split("site-packages" + os.sep, 1)[1]
    if path.startswith(workspace + os.sep):
        return os.path.relpath(path, workspace)
    return path


def child(tool: str, module_name: str, workspace: str) -> dict[str, Any]:
    started = time.perf_counter()
    sys.path.insert(0, workspace)
    import importlib

    import torch

    spec = next(spec for spec in MODELS if spec.module == module_name)
    model_class = getattr(importlib.import_module(f"{PACKAGE}.{module_name}"), spec.class_name)
    model = model_class()
    result: dict[str, Any] = {"setup_seconds": time.perf_counter() - started}
    torch_folder = os.path.dirname(torch.__file__)
    if tool == "fx":
        analysis_started = time.perf_counter()
        try:
            graph_module = torch.fx.symbolic_trace(model)
            result["report"] = f"traced: {len(graph_module.graph.nodes)} nodes"
        except Exception as error:
            frames = traceback.extract_tb(error.__traceback__)
            outside_torch = [frame for frame in frames
                             if not frame.filename.startswith(torch_folder)]
            message = str(error).splitlines()[0] if str(error) else ""
            result["report"] = f"{type(error).__name__}: {message[:70]}"
            result["locations"] = [
                "innermost frame " + f"{short_path(frames[-1].filename, workspace)}:"
                f"{frames[-1].lineno}",
                "innermost outside torch "
                + (f"{short_path(outside_torch[-1].filename, workspace)}:"
                   f"{outside_torch[-1].lineno}" if outside_torch else "-"),
            ]
            result["failures"] = 1
        result["analysis_seconds"] = time.perf_counter() - analysis_started
    else:
        import torch._dynamo

        inputs = example_inputs(module_name)
        analysis_started = time.perf_counter()
        try:
            explanation = torch._dynamo.explain(model)(*inputs)
            # One line per distinct (place, reason), with how often it broke the graph.
            reasons: collections.Counter[str] = collections.Counter()
            for reason in explanation.break_reasons:
                where = (f"{short_path(reason.user_stack[-1].filename, workspace)}:"
                         f"{reason.user_stack[-1].lineno}" if reason.user_stack else "?")
                reasons[f"{where} {reason.reason.splitlines()[0][:90]}"] += 1
            result["report"] = (f"{explanation.graph_count} graphs, "
                                f"{explanation.graph_break_count} graph breaks"
                                + ("" if not reasons else f" ({len(reasons)} distinct)"))
            result["locations"] = [f"{count}x {reason}" for reason, count in reasons.items()]
            result["failures"] = explanation.graph_break_count
        except Exception as error:  # dynamo may fail outright; that is what it reports
            frames = traceback.extract_tb(error.__traceback__)
            message = str(error).splitlines()[0] if str(error) else ""
            result["report"] = f"error {type(error).__name__}: {message[:70]}"
            result["locations"] = [f"innermost frame {short_path(frames[-1].filename, workspace)}"
                                   f":{frames[-1].lineno}"] if frames else []
        result["analysis_seconds"] = time.perf_counter() - analysis_started
    return result


# -- the parent ----------------------------------------------------------------------------


def run_in_process(tool: str, spec: ModelSpec, workspace: str) -> dict[str, Any]:
    command = [sys.executable, os.path.abspath(__file__), "--child", tool, spec.module,
               workspace]
    started = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True, cwd=workspace,
                               env=child_environment())
    wall = time.perf_counter() - started
    if completed.returncode != 0:
        return {"wall": wall, "report": f"the process failed: {completed.stderr[-300:]}",
                "locations": []}
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    result["wall"] = wall
    return result


def run_fx_lsp(spec: ModelSpec, workspace: str) -> dict[str, Any]:
    path = os.path.join(PACKAGE, f"{spec.module}.py")
    command = [sys.executable, "-m", "fx_lsp", "check", "--format", "json", "--no-cache", path]
    started = time.perf_counter()
    completed = subprocess.run(command, capture_output=True, text=True, cwd=workspace)
    wall = time.perf_counter() - started
    report = json.loads(completed.stdout)
    module = next(item for item in report["modules"] if item["class"] == spec.class_name)
    locations = []
    for failure in module["failures"]:
        innermost = failure["frames"][-1] if failure["frames"] else failure
        locations.append(f"{failure['code']} {failure['kind']} at {failure['path']}:"
                         f"{failure['line']}:{failure['column']}, innermost "
                         f"{short_path(innermost['path'], workspace)}:{innermost['line']}"
                         + (" (flagged as a possible consequence)"
                            if failure["possible_consequence"] else ""))
    codes = ", ".join(failure["code"] for failure in module["failures"])
    return {"wall": wall, "analysis_seconds": module["trace_seconds"],
            "report": f"{module['status']}: {len(module['failures'])} failures ({codes})",
            "failures": len(module["failures"]), "locations": locations}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repetitions", type=int, default=2)
    parser.add_argument("--child", nargs=3, metavar=("TOOL", "MODULE", "WORKSPACE"),
                        help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        print(json.dumps(child(*arguments.child)))
        return

    print(f"compare tools: {machine_line()}")
    version_before = engine_version()
    print(f"engine at {version_before}")
    workspace = tempfile.mkdtemp(prefix="fx-lsp-compare-")
    # (model, tool) -> the result of each repetition
    rows: dict[tuple[str, str], list[dict[str, Any]]] = {}
    try:
        build_workspace(workspace)
        for repetition in range(arguments.repetitions):
            for spec in MODELS:
                for tool in TOOLS:
                    if tool == "fx-lsp check":
                        result = run_fx_lsp(spec, workspace)
                    else:
                        short = "fx" if tool.startswith("torch.fx") else "dynamo"
                        result = run_in_process(short, spec, workspace)
                    rows.setdefault((f"{spec.library} {spec.name}", tool), []).append(result)
                    print(f"  #{repetition + 1} {spec.library} {spec.name:<20} {tool:<24} "
                          f"{result['wall']:6.1f} s wall, analysis "
                          f"{result.get('analysis_seconds', float('nan')):6.2f} s  "
                          f"{result['report']}", flush=True)
                    if repetition == 0:
                        for location in result.get("locations", []):
                            print(f"      {location}")
    finally:
        shutil.rmtree(workspace, ignore_errors=True)

    if engine_version() != version_before:
        print(f"WARNING: fxcore/fx_lsp changed during the run: now {engine_version()}")
    # The fastest repetition of each: the machine is shared, and load only ever slows.
    table = []
    for (model, tool), results in rows.items():
        analyses = [result["analysis_seconds"] for result in results
                    if "analysis_seconds" in result]
        table.append([model, f"`{tool}`", f"{min(result['wall'] for result in results):.1f} s",
                      f"{min(analyses):.2f} s" if analyses else "-", results[0]["report"]])
    emit("compare_tools", markdown(
        ["model", "tool", f"wall, fresh process (fastest of {arguments.repetitions})",
         "analysis call", "reports"], table))

if __name__ == "__main__":
    main()
