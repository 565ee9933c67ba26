"""With ``capture_scalar_outputs`` (the fix of a ``.tolist()`` read into ``torch.split``),
dynamo keeps the read in its graph, and the graph's own code asks the meta tensor for the
numbers: they are the values fx-lsp planned for the user's line (``graph_places``), so the
graph's runtime asserts (split sizes adding up to the length) hold as they do on real data,
and the verdict is real torch.compile's: it compiles."""

from __future__ import annotations

import contextlib
import io
import textwrap
from pathlib import Path

import pytest
import torch
from source_modules import load_module

from fxcore.model.job_spec import EngineConfig, TraceJob
from fxcore.model.tensor_spec import TensorSpec
from fxcore.worker.building.instances import Built, build_class
from fxcore.worker.capture.compile.compiling import CompileCapture
from fxcore.worker.job.capture_target import CaptureTarget
from fxcore.worker.job.inputs_decision import InputsDecision
from fxcore.worker.job.job_context import JobContext
from fxcore.workspace.discovery import top_level_classes

pytestmark = pytest.mark.matrix

SOURCE = textwrap.dedent("""\
    import torch
    from torch import nn


    class SplitByToList(nn.Module):
        def forward(self, x, lengths):
            first = lengths[0] + 1
            sizes = torch.stack([first, x.shape[0] - first])
            parts = torch.split(x, sizes.tolist())
            return torch.stack([part.sum(0) for part in parts])
    """)
INPUTS = {"x": TensorSpec("float32", (10, 8)), "lengths": TensorSpec("int64", (2,))}


def _capture(path: Path) -> list:
    cls = load_module(path, "graph_values_split").SplitByToList
    context = JobContext(TraceJob(path=str(path), workspace_root=str(path.parent),
                                  config=EngineConfig()))
    source = top_level_classes(path.read_text(encoding="utf-8"))["SplitByToList"]
    built = build_class(context, cls, source)
    assert isinstance(built, Built), built
    target = CaptureTarget(cls, source, built.model, built.instantiated_on,
                           built.concrete_args)
    with contextlib.redirect_stdout(io.StringIO()):
        return CompileCapture().capture(context, target, InputsDecision(INPUTS)).failures


def test_split_sizes_read_in_the_graph_pass_its_runtime_assert(tmp_path: Path) -> None:
    path = tmp_path / "split_sizes.py"
    path.write_text(SOURCE, encoding="utf-8")
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        failures = _capture(path)
        # Real torch on the CPU, real data: one graph, no break, the eager output.
        model = load_module(path, "graph_values_split_real").SplitByToList()
        x, lengths = torch.randn(10, 8), torch.tensor([3, 1])
        graphs: list = []

        def backend(graph_module: torch.fx.GraphModule, _inputs: list) -> object:
            graphs.append(graph_module)
            return graph_module.forward

        torch._dynamo.reset()
        compiled = torch.compile(model, backend=backend, fullgraph=True)(x, lengths)
    assert len(graphs) == 1
    assert torch.equal(compiled, model(x, lengths))
    assert [(failure.code, failure.message) for failure in failures] == []
