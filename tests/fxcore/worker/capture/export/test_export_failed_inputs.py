"""A class the export mode fails on, or could not check on meta, says which example inputs
export ran on, also when the failure left no graph: the failure may come from the inputs (an
image too small for the model's kernels), and the third-party fidelity check runs real
torch.export on the very same specs (tests/thirdparty/test_export_fidelity.py)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from fxcore.model.job_spec import EngineConfig, TraceJob
from fxcore.model.results import ModuleResult
from fxcore.model.tensor_spec import parse_spec
from fxcore.worker.building.instances import Built, build_class
from fxcore.worker.capture.export.exporting import ExportCapture
from fxcore.worker.job.capture_target import CaptureRecord, CaptureTarget
from fxcore.worker.job.inputs_decision import InputsDecision
from fxcore.worker.job.job_context import JobContext
from fxcore.worker.pipeline.verdict import module_verdict
from fxcore.workspace.discovery import top_level_classes

MODEL = '''import torch
from torch import nn


class TooSmall(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 7)

    def forward(self, x):
        return self.conv(x)


class HeldInAList(nn.Module):
    def __init__(self):
        super().__init__()
        self.tables = [torch.ones(8)]

    def forward(self, x):
        return x + self.tables[0]
'''


def verdict(tmp_path: Path, name: str, spec: str) -> tuple[ModuleResult, CaptureRecord]:
    path = tmp_path / f"export_ran_on_{name.lower()}.py"  # a module of its own per test
    path.write_text(MODEL, encoding="utf-8")
    context = JobContext(TraceJob(path=str(path), workspace_root=str(tmp_path),
                                  config=EngineConfig()))
    cls = getattr(importlib.import_module(path.stem), name)
    source = top_level_classes(MODEL)[name]
    built = build_class(context, cls, source)
    assert isinstance(built, Built) and built.instantiated_on == "meta"
    target = CaptureTarget(cls, source, built.model, built.instantiated_on)
    inputs = InputsDecision({"x": parse_spec(spec)}, "config")
    record = ExportCapture().capture(context, target, inputs)
    return module_verdict(context, ExportCapture(), target, inputs, record), record


def test_a_failure_without_a_graph_reports_the_inputs_export_ran_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    result, record = verdict(tmp_path, "TooSmall", "float32[2, 3, 4, 4]")
    # The 4x4 image is smaller than the 7x7 kernel: export stops in the convolution, with
    # no graph to draw.
    assert result.status == "failed" and record.graph is None
    assert result.failures[0].line == 11
    assert result.inputs is not None
    assert (result.inputs.origin, result.inputs.tensors) == ("config",
                                                             {"x": "float32[2, 3, 4, 4]"})


def test_a_class_not_checkable_on_meta_reports_the_inputs_export_ran_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(tmp_path))
    result, record = verdict(tmp_path, "HeldInAList", "float32[2, 8]")
    assert result.status == "not-traced" and record.not_checked is not None
    assert result.inputs is not None and result.inputs.tensors == {"x": "float32[2, 8]"}
