"""Silent mis-traces (FX201-FX205): each on a small model that plain torch.fx traces without
an error, into a graph that does not mean what the code says."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from torch import fx

from fxcore.fixing import fix_plan
from fxcore.host.engine import Engine
from fxcore.model.job_spec import TraceJob
from fxcore.model.results import ModuleResult
from fxcore.workspace.config import load_config

from engine_support import Workspace, check_job, line_of

CASES = {
    "FX201": ("""
        from torch import nn


        class Net(nn.Module):
            def forward(self, x, mask=None):
                if mask is None:
                    return x
                return x * mask
        """, "mask is None", "mask is None"),
    "FX202": ("""
        from torch import nn


        class Net(nn.Module):
            def forward(self, x):
                if self.training:
                    x = x * 2
                return x + 1
        """, "x = x * 2", "x = x * 2"),
    "FX203": ("""
        from torch import nn
        from torch.utils.checkpoint import checkpoint


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = nn.Linear(4, 4)

            def forward(self, x):
                return checkpoint(self.block, x, use_reentrant=False)
        """, "return checkpoint", "checkpoint(self.block, x, use_reentrant=False)"),
    "FX204": ("""
        from torch import nn


        class Net(nn.Module):
            def forward(self, x, scale):
                return x + 1
        """, "def forward", "scale"),
    "FX205": ("""
        from torch import nn


        class Net(nn.Module):
            def forward(self, x, double):
                if double:
                    return x * 2
                return x
        """, "class Net", "Net"),
}


@pytest.mark.parametrize("code", sorted(CASES))
def test_each_silent_mistrace_is_a_hint(engine: Engine, workspace: Workspace,
                                         code: str) -> None:
    source, line_snippet, span_snippet = CASES[code]
    path = workspace.write("net.py", source)
    if code == "FX205":
        (workspace.root / "pyproject.toml").write_text(
            '[tool.fx-lsp.modules."net:Net"]\nconcrete-args = {double = true}\n')
    namespace: dict[str, object] = {}
    exec(textwrap.dedent(source), namespace)  # plain torch.fx traces it without an error
    concrete = {"double": True} if code == "FX205" else None
    fx.symbolic_trace(namespace["Net"](), concrete_args=concrete)

    config = load_config(str(workspace.root))[0]
    (module,) = check_job(engine, TraceJob(path=str(path), workspace_root=str(workspace.root),
                                           config=config)).modules
    assert module.status == "traceable"
    (hint,) = [h for h in module.hints if h.code == code]
    line = line_of(path, line_snippet)
    text = Path(path).read_text().splitlines()[line - 1]
    assert (hint.line, hint.column, hint.end_column) == (
        line, text.index(span_snippet) + 1, text.index(span_snippet) + 1 + len(span_snippet))
    others = {h.code for h in module.hints} - {code, "FX200"}
    assert not others, others
    if code == "FX205":
        assert f"lines {line_of(path, 'if double')}" in hint.message or \
            f"line {line_of(path, 'if double')}" in hint.message


def test_no_hint_where_the_graph_means_what_the_code_says(engine: Engine,
                                                          workspace: Workspace) -> None:
    path = workspace.write("plain.py", """
        import torch
        from torch import nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.drop = nn.Dropout(0.1)

            def forward(self, x, bias):
                return self.drop(x) + bias
        """)
    (module,) = check_job(engine, TraceJob(path=str(path),
                                           workspace_root=str(workspace.root))).modules
    assert module.status == "traceable" and module.hints == []


def test_the_fx201_fix_traces_the_none_case(engine: Engine, workspace: Workspace) -> None:
    path = workspace.write("net.py", CASES["FX201"][0])
    pyproject = workspace.root / "pyproject.toml"
    pyproject.write_text("[tool.fx-lsp]\n")

    def check() -> ModuleResult:
        config, problems = load_config(str(workspace.root))
        assert problems == []
        (module,) = check_job(engine, TraceJob(path=str(path), workspace_root=str(workspace.root),
                                               config=config)).modules
        return module

    module = check()
    (hint,) = [h for h in module.hints if h.code == "FX201"]
    assert "concrete-none = [\"mask\"]" in hint.message
    (fix,) = fix_plan.plan(hint, module, lambda p: Path(p).read_text(),
                           lambda p: str(workspace.root))
    assert fix.title == "Trace Net with mask = None (concrete-none, pyproject.toml)"
    assert not fix.safe and fix.path == str(pyproject)
    old, new = fix.texts(lambda p: Path(p).read_text())
    assert old == "[tool.fx-lsp]\n"
    assert fix.transform(new) == new  # applying it twice changes nothing
    pyproject.write_text(new)
    assert 'concrete-none = ["mask"]' in new

    fixed = check()
    assert fixed.status == "traceable"
    assert [h.code for h in fixed.hints if h.code == "FX201"] == []
    # The graph is now the None case (x returned as it is, no multiplication), as plain
    # torch.fx traces it with concrete_args={"mask": None}.
    assert "mul" not in fixed.generated_code
    namespace: dict[str, object] = {}
    exec(textwrap.dedent(CASES["FX201"][0]), namespace)
    plain = fx.symbolic_trace(namespace["Net"](), concrete_args={"mask": None})
    assert fixed.node_count == len(plain.graph.nodes)
    assert "mul" not in [str(node.target) for node in plain.graph.nodes]
