"""A class the export mode fails on says which example inputs export ran on, also when the
failure left no graph: the failure may come from the inputs (an image too small for the
model's kernels), and the third-party fidelity check runs real torch.export on the very same
specs (tests/thirdparty/test_export_fidelity.py)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from fxcore.discovery import top_level_classes
from fxcore.job_spec import EngineConfig, TraceJob
from fxcore.tensor_spec import parse_spec
from fxcore.worker.building.sources import Built, build_class
from fxcore.worker.capture.export.capture import ExportCapture
from fxcore.worker.capture.record import CaptureTarget
from fxcore.worker.context import JobContext
from fxcore.worker.verdict import module_verdict

MODEL = '''import torch
from torch import nn


class TooSmall(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 7)

    def forward(self, x):
        y = self.conv(x)
        if y.shape[-1] < 1:
            raise ValueError(len(y))
        return y
'''


def test_a_failure_without_a_graph_reports_the_inputs_export_ran_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "export_too_small.py"
    path.write_text(MODEL, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    context = JobContext(TraceJob(path=str(path), workspace_root=str(tmp_path),
                                  config=EngineConfig()))
    cls = importlib.import_module(path.stem).TooSmall
    source = top_level_classes(MODEL)["TooSmall"]
    built = build_class(context, cls, source)
    assert isinstance(built, Built)
    target = CaptureTarget(cls, source, built.model, built.instantiated_on,
                           example_inputs={"x": parse_spec("float32[2, 3, 4, 4]")},
                           inputs_origin="config")
    record = ExportCapture().capture(context, target)
    result = module_verdict(context, ExportCapture(), target, record)
    # The 4x4 image is smaller than the 7x7 kernel: export stops in the convolution, with
    # no graph to draw.
    assert result.status == "failed" and record.graph is None
    assert result.failures[0].line == 11
    assert result.inputs is not None
    assert (result.inputs.origin, result.inputs.tensors) == ("config",
                                                             {"x": "float32[2, 3, 4, 4]"})
