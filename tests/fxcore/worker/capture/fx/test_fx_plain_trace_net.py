"""The safety net (``fxcore.worker.capture.fx.plain_agreement``): a class the recovering
trace failed is traced again as plain torch.fx traces it, and where that succeeds the verdict
is plain torch.fx's, graph and all.

These classes are ones the recovering tracer cannot get right by itself: the user's own code
catches the error a plain Proxy raises and goes another way, and the recovering tracer, which
answers instead of raising, records a failure plain torch.fx never meets.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from pathlib import Path

import pytest
import torch
from plain_tracing import plain_failure_frame, plain_trace
from torch import fx, nn

from fxcore.host.engine import Engine
from fxcore.worker.building.as_built import snapshot
from fxcore.worker.capture.fx import plain_agreement
from fxcore.worker.capture.fx.tracer import RecoveringTracer, proxy_patches

from engine_support import Workspace, failure_span, line_of, span_of

#: Compared with real torch on the installed torch: run under every torch series too.
pytestmark = pytest.mark.matrix

SOURCE = '''
import torch
from torch import nn


class CatchesConversion(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(4, 4)
        self.unused = nn.Linear(4, 4)

    def forward(self, x):
        try:
            n = int(x.shape[0])
        except TypeError:  # plain torch.fx: a Proxy has no __int__
            n = x.shape[0]
        return self.proj(x) * n


class CatchesLen(nn.Module):
    def forward(self, x):
        try:
            n = len(x)
        except RuntimeError:  # plain torch.fx: 'len' is not supported
            n = x.size(0)
        return x * n


class ReadsTraining(nn.Module):
    def forward(self, x):
        try:
            n = int(x.shape[0])
        except TypeError:
            n = x.size(0)
        scale = 2.0 if self.training else 2.0
        return x * n * scale


class Flagged(nn.Module):
    def __init__(self):
        super().__init__()
        self.ready = False

    def forward(self, x):
        if not self.ready and x.sum() > 0:
            self.ready = True
        return x
'''

#: The classes plain torch.fx traces although the recovering trace records a failure.
SAVED = ("CatchesConversion", "CatchesLen", "ReadsTraining")


def recorded_by_recovering_trace(path: Path, name: str) -> list[str]:
    """The failure kinds the recovering tracer alone records on the class (in this process)."""
    spec = importlib.util.spec_from_file_location(f"net_{name}_{id(path)}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    with torch.device("meta"):
        model = getattr(module, name)()
    tracer = RecoveringTracer()
    with proxy_patches():
        tracer.trace(model)
    return [failure.kind for failure in tracer.recorded_failures]


def test_a_class_plain_torch_fx_traces_gets_its_verdict_and_graph(
        engine: Engine, workspace: Workspace) -> None:
    path = workspace.write("caught.py", SOURCE)
    modules = {m.class_name: m for m in workspace.check(engine, "caught.py").modules}
    for name in SAVED:
        # What the net saves: the recovering trace alone fails the class.
        assert recorded_by_recovering_trace(path, name) in (["conversion"], ["len"]), name
        error, plain_code = plain_trace(path, workspace.root, name)
        assert error is None, (name, error)
        module = modules[name]
        assert (module.status, module.failures) == ("traceable", []), name
        assert module.generated_code is not None
        assert module.generated_code.strip() == plain_code.strip(), name
        # The retrace in eval() mode (FX202) is plain too: a recovering one, with its
        # stand-in number, would take the try branch and tell a difference that is not there.
        assert [hint.code for hint in module.hints if hint.kind == "training"] == [], name

    # The plain trace's bookkeeping is the verdict's: nodes by line, the submodules and
    # parameters used (FX200 for the one that is not).
    caught = modules["CatchesConversion"]
    assert (caught.module_order, caught.parameter_order) == (["proj"],
                                                            ["proj.weight", "proj.bias"])
    assert (str(path), line_of(path, "self.proj(x) * n")) in caught.line_nodes
    assert [(hint.code, hint.member) for hint in caught.hints] == [("FX200", "unused")]


def test_the_plain_trace_meets_the_instance_as_built(engine: Engine,
                                                     workspace: Workspace) -> None:
    """The recovering trace goes into ``if not self.ready and x.sum() > 0`` and sets the flag;
    a second trace of that instance would skip the traced condition and trace. Put back as
    built, it fails where plain torch.fx fails on the class as built."""
    path = workspace.write("flagged.py", SOURCE)
    (module,) = [m for m in workspace.check(engine, "flagged.py").modules
                 if m.class_name == "Flagged"]
    error, _ = plain_trace(path, workspace.root, "Flagged")
    assert error is not None
    plain_here = plain_failure_frame(error, workspace.root)
    assert plain_here is not None
    assert module.status == "failed"
    first = module.failures[0]
    line = line_of(path, "if not self.ready")
    assert (first.code, failure_span(first)) == ("FX001", span_of(path, line, "x.sum() > 0"))
    assert (plain_here.line, plain_here.column) == (line, first.column)


class ConstantAfterBranch(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("table", torch.ones(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:  # plain torch.fx stops here
            x = x + 1
        return x * self.table.clone()  # a tensor constant, set on the instance by the trace


def test_a_failed_plain_trace_leaves_the_recovering_graph_its_constants() -> None:
    """The recovering trace's graph stays the capture's where plain tracing fails too; the
    constants it names, which that trace set on the instance past the line plain tracing
    stops at, are there again after the plain trace (the inputs' search builds a module of
    that graph)."""
    model = ConstantAfterBranch()
    put_back = snapshot(model)
    tracer = RecoveringTracer()
    with proxy_patches():
        graph = tracer.trace(model)
    assert [failure.kind for failure in tracer.recorded_failures] == ["control-flow"]
    assert hasattr(model, "_tensor_constant0")
    plain = plain_agreement.plain_trace(RecoveringTracer(), model, None, put_back,
                                        contextlib.nullcontext())  # type: ignore[arg-type]
    assert plain is None
    assert not plain_agreement.is_plain(graph)
    module = fx.GraphModule(model, graph)
    assert torch.equal(module._tensor_constant0, torch.ones(4))
