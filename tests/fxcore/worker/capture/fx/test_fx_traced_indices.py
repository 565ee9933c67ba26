"""A traced value indexing a container or tensor attribute gets plain torch.fx's verdict.

torch's C indexing asks whether a tensor's index is a sequence (its length): a plain Proxy
raises, torch clears the error and dispatches to ``__torch_function__``, so plain torch.fx
traces ``self.cache[input_pos]``. The recovering tracer's ``__len__`` answered 1 there, and
torch walked the Proxy as a sequence: FX002 and FX003 on a rotary embedding plain torch.fx
traces. Each spelling here is compared with plain ``torch.fx.symbolic_trace`` of
the same class, built the same way, in the same test: traceable with the same generated code
exactly where plain tracing succeeds, and where it fails, the first failure on the line and
columns plain tracing raised at.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch
from plain_tracing import plain_failure_frame, plain_trace
from torch import fx

from fxcore.host.engine import Engine
from fxcore.worker.capture.fx.tracer import RecoveringTracer, proxy_patches

from engine_support import Workspace, failure_span

#: Compared with real torch on the installed torch: run under every torch series too.
pytestmark = pytest.mark.matrix

CORPUS = '''
import torch
from torch import nn


class RoPECache(nn.Module):
    """A rotary embedding that indexes its cache by positions."""

    def __init__(self, dim: int = 16, max_seq_len: int = 64):
        super().__init__()
        theta = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
        seq = torch.arange(max_seq_len, dtype=theta.dtype)
        idx = torch.einsum("i,j->ij", seq, theta).float()
        self.register_buffer("cache", torch.stack([torch.cos(idx), torch.sin(idx)], dim=-1),
                             persistent=False)

    def forward(self, x, *, input_pos=None):
        seq_len = x.size(1)
        rope_cache = self.cache[:seq_len] if input_pos is None else self.cache[input_pos]
        xshaped = x.float().reshape(x.shape[0], x.shape[1], x.shape[2], -1, 2)
        rope_cache = rope_cache.view(-1, xshaped.size(1), 1, xshaped.size(3), 2)
        out = torch.stack(
            [xshaped[..., 0] * rope_cache[..., 0] - xshaped[..., 1] * rope_cache[..., 1],
             xshaped[..., 1] * rope_cache[..., 0] + xshaped[..., 0] * rope_cache[..., 1]], -1)
        return out.flatten(3).type_as(x)


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("cache", torch.arange(64.0).reshape(32, 2), persistent=False)
        self.table = {"scale": 2.0, "shift": 1.0}
        self.values = [1.0, 2.0, 3.0]


class ByTensor(Base):
    def forward(self, x, pos):
        return self.cache[pos] * x


class ByShapeItem(Base):
    def forward(self, x):
        return self.cache[x.shape[0]] * x


class ByMask(Base):
    def forward(self, x):
        return self.cache[x > 0]


class ByTupleWithTensor(Base):
    def forward(self, x, pos):
        return self.cache[pos, 0] * x


class ByEllipsis(Base):
    def forward(self, x, pos):
        return self.cache[..., pos] * x


class ByListOfTensors(Base):
    def forward(self, x, pos):
        return self.cache[[pos, pos]] * x


class ByIndexSelect(Base):
    def forward(self, x, pos):
        return torch.index_select(self.cache, 0, pos) * x


class ByMethodIndexSelect(Base):
    def forward(self, x, pos):
        return self.cache.index_select(0, pos) * x


class ByGather(Base):
    def forward(self, x, pos):
        return self.cache.gather(0, pos) * x


class ByStore(Base):
    def forward(self, x, pos):
        cache = self.cache.clone()
        cache[pos] = x
        return cache


class ByDictConstant(Base):
    def forward(self, x):
        return x * self.table["scale"] + self.table["shift"]


class BySlice(Base):
    def forward(self, x):
        return self.cache[: x.size(0)] * x


class ByListTraced(Base):
    def forward(self, x):
        return x * self.values[x.size(0)]


class ByDictTraced(Base):
    def forward(self, x):
        return x * self.table[x.size(0)]


class ByLenOfTraced(Base):
    def forward(self, x):
        return self.cache[: len(x)] * x


class ByTensorLiteral(Base):
    def forward(self, x):
        return self.cache[torch.tensor([1, x.shape[0] - 1])]
'''

#: Whether plain torch.fx traces each class, on the CPU and on meta alike: the corpus has
#: both outcomes, so that agreeing is never agreeing to fail.
PLAIN_TRACES = {
    "RoPECache": True, "ByTensor": True, "ByShapeItem": True, "ByMask": True,
    "ByTupleWithTensor": True, "ByEllipsis": True, "ByListOfTensors": True,
    "ByIndexSelect": True, "ByMethodIndexSelect": True, "ByGather": True, "ByStore": True,
    "ByDictConstant": True,
    # A slice's or list's index is converted in C (no __index__ on a Proxy); a dict key is
    # hashed and missed; len() and torch.tensor([...]) ask the Proxy's length and fail.
    "BySlice": False, "ByListTraced": False, "ByDictTraced": False, "ByLenOfTraced": False,
    "ByTensorLiteral": False,
}


def load(path: Path) -> ModuleType:
    """The corpus file imported in this process, under a name of its own."""
    spec = importlib.util.spec_from_file_location(f"traced_indices_{id(path)}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_each_traced_index_gets_plain_torch_fx_verdict(engine: Engine,
                                                      workspace: Workspace) -> None:
    path = workspace.write("indices.py", CORPUS)
    result = workspace.check(engine, "indices.py")
    assert {module.class_name for module in result.modules} == set(PLAIN_TRACES)
    for module in result.modules:
        name = module.class_name
        error, plain_code = plain_trace(path, workspace.root, name)
        cpu_error, cpu_code = plain_trace(path, workspace.root, name, device="cpu")
        assert (error is None, cpu_error is None) == (PLAIN_TRACES[name],) * 2, (name, error)
        assert cpu_code == plain_code, name
        if error is None:
            assert (module.status, module.failures) == ("traceable", []), name
            assert module.generated_code is not None
            assert module.generated_code.strip() == plain_code.strip(), name
            continue
        assert module.status == "failed", name
        plain_here = plain_failure_frame(error, workspace.root)
        assert plain_here is not None, (name, error)
        first = module.failures[0]
        assert (first.path, *failure_span(first)) == (
            plain_here.path, plain_here.line, plain_here.column, plain_here.end_line,
            plain_here.end_column), (name, first.message, error)


def test_the_recovering_trace_alone_records_nothing_where_plain_torch_fx_traces(
        workspace: Workspace) -> None:
    """Without the second, plain trace (``plain_agreement``): the recovering tracer itself
    answers torch's C indexing as a plain Proxy does, so a trace that records nothing builds
    plain torch.fx's graph, and where plain tracing fails, its first failure is there too."""
    path = workspace.write("indices.py", CORPUS)
    corpus = load(path)
    for name, traces in PLAIN_TRACES.items():
        with torch.device("meta"):  # one instance each: a trace numbers its constants on it
            model, plain_model = getattr(corpus, name)(), getattr(corpus, name)()
        try:
            plain_code, plain_error = fx.symbolic_trace(plain_model).code, None
        except Exception as error:
            plain_code, plain_error = "", error
        assert (plain_error is None) == traces, (name, plain_error)
        tracer = RecoveringTracer()
        ending: BaseException | None = None
        with proxy_patches():
            try:
                graph = tracer.trace(model)
            except Exception as error:
                ending = error
        if traces:
            assert (tracer.recorded_failures, ending) == ([], None), name
            assert fx.GraphModule(tracer.root, graph).code == plain_code, name
            continue
        plain_here = plain_failure_frame(plain_error, workspace.root)
        assert plain_here is not None
        if tracer.recorded_failures:
            mine = [p for p in tracer.recorded_failures[0].stack if p.filename == str(path)][-1]
            assert mine.line == plain_here.line, name
        else:
            assert ending is not None, name
            tb = ending.__traceback__
            lines = []
            while tb is not None:
                if tb.tb_frame.f_code.co_filename == str(path):
                    lines.append(tb.tb_lineno)
                tb = tb.tb_next
            assert lines[-1] == plain_here.line, name
