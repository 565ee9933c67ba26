"""Forwards that draw from Python's ``random`` or NumPy's global generator: the draw is
reported at its line (FX206), and the class gets the same verdict in every run, and the
verdict plain ``torch.fx.symbolic_trace`` gives under the same seeds
(``fxcore.worker.running.seeding``)."""

from __future__ import annotations

import importlib
import random
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import fx

from fx_lsp.cli.output_formats.json_report import parse_report
from fxcore.host.engine import Engine
from fxcore.model.job_spec import EngineConfig, TraceJob
from fxcore.worker.running.seeding import seed_generators

from cli_support import fx_lsp
from engine_support import REPO_ROOT, Workspace, check_job, line_of, span_of

sys.path.insert(0, str(REPO_ROOT))
from benchmarks.fidelity.plain_fx_check import disagreement, plain_verdicts

#: How many layers ``PickLayer`` and ``PickBlock`` choose from: a draw of eight outcomes, so
#: two unseeded runs agree by chance only rarely.
LAYERS = 8

DRAWS = '''
    import random
    from random import randint

    import numpy as np
    import torch
    from torch import nn


    class RandomDrop(nn.Module):
        def __init__(self, p: float = 0.5):
            super().__init__()
            self.p = p
            self.lin = nn.Linear(8, 8)

        def forward(self, x):
            if random.random() > self.p:
                return x
            return self.lin(x)


    class PickLayer(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range({layers})])

        def forward(self, x):
            layer = random.choice(self.layers)
            return layer(x)


    def crop(x):
        size = randint(1, 8)
        return x[:, :size]


    class RandomCrop(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)

        def forward(self, x):
            return crop(self.proj(x))


    class NumpyScale(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)

        def forward(self, x):
            return self.proj(x) * float(np.random.randint(1, 1000))


    class Outer(nn.Module):
        def __init__(self):
            super().__init__()
            self.drop = RandomDrop()

        def forward(self, x):
            return self.drop(x) + 1


    class TorchNoise(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(8, 8)
            self.order = random.sample(range(8), 8)  # drawn while built, not while traced

        def forward(self, x):
            keep = torch.rand_like(x[:, :1]) > 0.5  # FX206's fix: drawn in the graph
            return torch.where(keep, x, self.proj(x))
'''.replace("{layers}", str(LAYERS))


def write_draws(workspace: Workspace) -> Path:
    workspace.write("pkg/__init__.py", "")
    return workspace.write("pkg/draws.py", DRAWS)


def test_each_draw_is_reported_at_its_line(engine: Engine, workspace: Workspace) -> None:
    path = write_draws(workspace)
    result = workspace.check(engine, "pkg/draws.py")
    modules = {module.class_name: module for module in result.modules}
    assert {name: module.status for name, module in modules.items()} == dict.fromkeys(
        modules, "traceable")
    draws = {name: [hint for hint in module.hints if hint.code == "FX206"]
             for name, module in modules.items()}
    # Each draw at the call that drew, in forward or in what it calls (a helper, a
    # submodule's forward: Outer's is RandomDrop's line); none for torch's own draw in the
    # graph, nor for one made while the instance was built.
    expected = {"RandomDrop": ("random.random()", "random.random()"),
                "PickLayer": ("random.choice(self.layers)", "random.choice(self.layers)"),
                "RandomCrop": ("randint(1, 8)", "size = randint(1, 8)"),
                "NumpyScale": ("np.random.randint(1, 1000)", "np.random.randint(1, 1000)"),
                "Outer": ("random.random()", "random.random()")}
    assert {name: len(hints) for name, hints in draws.items()} == {
        **dict.fromkeys(modules, 0), **dict.fromkeys(expected, 1)}
    for name, (call, line_snippet) in expected.items():
        (hint,) = draws[name]
        assert (hint.path, *span_of(path, line_of(path, line_snippet), call)) == (
            str(path), hint.line, hint.column, hint.end_line, hint.end_column), name
        assert hint.kind == "random-draw"
        assert hint.message.startswith(f"`{call}` draws a Python value while tracing: the "
                                       "graph keeps the outcome drawn"), hint.message
        assert "torch.where" in hint.message and "concrete_args" in hint.message
        assert "torch.fx.wrap" in hint.message


def _verdicts(report: dict[str, Any]) -> dict[str, Any]:
    """What a run says of each class, all but its timings."""
    return {module["class"]: {key: value for key, value in module.items()
                              if key not in ("trace_seconds", "loop_seconds")}
            for module in report["modules"]}


def test_the_same_verdict_in_two_runs(workspace: Workspace) -> None:
    write_draws(workspace)
    runs = [fx_lsp("check", "--no-cache", "--format", "json", "pkg/draws.py",
                   cwd=workspace.root) for _ in range(2)]
    first, second = (_verdicts(parse_report(run.stdout)) for run in runs)
    assert len(first) == 6
    assert first == second


def plain_graph(workspace: Workspace, class_name: str) -> fx.GraphModule:
    """The class built on meta and traced with plain torch.fx, seeded as fx-lsp's worker
    seeds (before the build and before the trace)."""
    sys.path.insert(0, str(workspace.root))
    try:
        module = importlib.import_module("pkg.draws")
        seed_generators()
        with torch.device("meta"):
            model = getattr(module, class_name)()
        seed_generators()
        return fx.symbolic_trace(model)
    finally:
        sys.path.remove(str(workspace.root))
        for name in [name for name in sys.modules if name == "pkg" or name.startswith("pkg.")]:
            del sys.modules[name]


def test_the_graph_plain_torch_fx_traces_under_the_same_seeds(engine: Engine,
                                                              workspace: Workspace) -> None:
    write_draws(workspace)
    result = workspace.check(engine, "pkg/draws.py")
    for module in result.modules:
        plain = plain_graph(workspace, module.class_name)
        # The same outcomes drawn: the same branch, layer and size, the same constant.
        assert module.generated_code.strip() == plain.code.strip(), module.class_name


PICK_BLOCK = '''
    import random

    from torch import nn


    class Gate(nn.Module):
        def forward(self, x):
            if x.sum() > 0:
                return x
            return -x


    class PickBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([nn.Identity() for _ in range({layers})])
            self.blocks[{gate}] = Gate()

        def forward(self, x):
            return random.choice(self.blocks)(x)
'''


@pytest.mark.slow
def test_a_drawn_failure_agrees_with_the_plain_torch_fx_reference(
        workspace: Workspace) -> None:
    """The layer the seeds choose fails to trace, the seven others trace: fx-lsp and the
    benchmarks' reference (``plain_fx_check``, plain torch.fx in a process of its own) draw
    the same and give the same verdict, failing at the same line."""
    seed_generators()
    gate = random.randrange(LAYERS)  # what `random.choice` of LAYERS blocks draws first
    workspace.write("pkg/__init__.py", "")
    path = workspace.write("pkg/blocks.py", PICK_BLOCK.replace("{layers}", str(LAYERS))
                           .replace("{gate}", str(gate)))
    report = parse_report(fx_lsp("check", "--no-cache", "--format", "json", "pkg/blocks.py",
                                 cwd=workspace.root).stdout)
    modules = {module["class"]: module for module in report["modules"]}
    block = modules["PickBlock"]
    assert block["status"] == "failed"
    assert block["failures"][0]["line"] == line_of(path, "if x.sum() > 0")
    outcomes = plain_verdicts(str(workspace.root), [block])
    assert outcomes[0]["status"] == "failed"
    assert disagreement(block, outcomes[0], str(workspace.root)) is None


def test_export_reports_the_draws_and_takes_the_outcome_fx_took(engine: Engine,
                                                                workspace: Workspace) -> None:
    """Non-strict torch.export runs forward's Python once, and keeps the outcome drawn as
    silently as torch.fx: it reports the same draws, and, seeded alike, chose what fx chose."""
    path = write_draws(workspace)
    result = check_job(engine, TraceJob(
        path=str(path), workspace_root=str(workspace.root),
        config=EngineConfig(modes=("fx", "export")), only_classes=["RandomDrop", "PickLayer"]))
    by_mode = {(module.class_name, module.mode): module for module in result.modules}
    assert len(by_mode) == 4
    for name in ("RandomDrop", "PickLayer"):
        fx_module, export_module = by_mode[name, "fx"], by_mode[name, "export"]
        assert export_module.status == "traceable"
        draws = [[(hint.line, hint.column, hint.message) for hint in module.hints
                  if hint.code == "FX206"] for module in (fx_module, export_module)]
        assert draws[0] == draws[1] and len(draws[0]) == 1, draws
        # The same layer ran (or none: the branch that returns x as it is).
        assert fx_module.module_order == export_module.module_order, name
