"""A model built on the CPU (its constructor reads values) compiles with meta weights when it
is large (``fxcore.worker.capture.compile.meta_weights``), and with its real weights when it is
small; either way its weights are its own again after."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import torch
from source_modules import load_module

from fxcore.model.job_spec import EngineConfig, TraceJob
from fxcore.model.tensor_spec import TensorSpec
from fxcore.worker.building.instances import Built, build_class
from fxcore.worker.capture.compile.compiling import CompileCapture
from fxcore.worker.capture.compile.meta_weights import LARGEST_REAL_RUN, weights_on_meta
from fxcore.worker.job.capture_target import CaptureTarget
from fxcore.worker.job.inputs_decision import InputsDecision
from fxcore.worker.job.job_context import JobContext
from fxcore.workspace.discovery import top_level_classes

SOURCE = '''
import torch
from torch import nn


class Scheduled(nn.Module):
    def __init__(self, dim):
        super().__init__()
        rates = [x.item() for x in torch.linspace(0, 0.1, 4)]
        self.blocks = nn.ModuleList(nn.Linear(dim, dim) for _ in rates)
        self.table = torch.ones(dim)

    def forward(self, x):
        if self.blocks[0].weight.is_meta:
            print("weights on meta")  # the line a run on meta breaks at
        for block in self.blocks:
            x = x + block(x)
        return x + self.table
'''


def _captured(tmp_path: Path, dim: int) -> tuple[list[int], torch.nn.Module]:
    path = tmp_path / f"scheduled_{dim}.py"
    path.write_text(SOURCE)
    module = load_module(path, path.stem)
    context = JobContext(TraceJob(path=str(path), workspace_root=str(tmp_path),
                                  config=EngineConfig()))
    source = top_level_classes(SOURCE)["Scheduled"]
    built = build_class(context, module.Scheduled, source)
    assert isinstance(built, Built) and built.instantiated_on == "cpu"
    # The worker builds it on the CPU (above); this instance has the size the test needs.
    model = module.Scheduled(dim)
    target = CaptureTarget(module.Scheduled, source, model, "cpu", {})
    with contextlib.redirect_stdout(io.StringIO()):
        record = CompileCapture().capture(context, target, InputsDecision(
            {"x": TensorSpec("float32", (2, dim))}))
    return [failure.line for failure in record.failures], model


def test_a_large_model_built_on_the_cpu_compiles_on_meta(tmp_path: Path) -> None:
    dim = 600  # 4 * 600 * 601 weights: over the limit
    assert 4 * dim * (dim + 1) > LARGEST_REAL_RUN
    lines, model = _captured(tmp_path, dim)
    assert lines == [SOURCE.splitlines().index('            print("weights on meta")  '
                                               '# the line a run on meta breaks at') + 1]
    assert all(not tensor.is_meta for tensor in model.parameters())
    assert not model.table.is_meta


def test_a_small_model_built_on_the_cpu_compiles_on_its_real_weights(tmp_path: Path) -> None:
    lines, _ = _captured(tmp_path, 8)
    assert lines == []


def test_weights_on_meta_puts_back_the_same_tensors() -> None:
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3))
    model.scale = torch.ones(3)
    before = [*model.parameters(), *model.buffers(), model.scale]
    with weights_on_meta(model):
        inside = [*model.parameters(), *model.buffers(), model.scale]
        assert all(tensor.is_meta for tensor in inside)
        assert isinstance(model[0].weight, torch.nn.Parameter)
    after = [*model.parameters(), *model.buffers(), model.scale]
    assert all(a is b for a, b in zip(before, after, strict=True))
