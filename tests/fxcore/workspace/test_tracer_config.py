"""[tool.fx-lsp] applied to tracing: tracer settings, and invalid values reported and defaulted."""

from __future__ import annotations

import textwrap

from fxcore.host.engine import Engine
from fxcore.workspace.config import load_config

from engine_support import Workspace


def test_tracer_configuration(engine: Engine, workspace: Workspace) -> None:
    workspace.write("pyproject.toml", textwrap.dedent("""
        [tool.fx-lsp]
        leaf-modules = ["net:Block"]
        autowrap-functions = ["net:count"]
        tracer = "net:LoggingTracer"

        [tool.fx-lsp.modules."net:Net"]
        concrete-args = {flag = false}
        """))
    workspace.write("net.py", """
        import torch
        from torch import fx, nn


        class LoggingTracer(fx.Tracer):
            pass


        def count(x):
            return len(x)


        class Block(nn.Module):
            def forward(self, x):
                return x if x.sum() > 0 else -x


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block()

            def forward(self, x, flag=True):
                if flag:
                    x = x * 2
                return self.block(x) * count(x)
        """)
    config, problems = load_config(str(workspace.root))
    assert problems == []
    modules = {m.class_name: m for m in workspace.check(engine, "net.py", config).modules}
    net = modules["Net"]
    assert net.status == "traceable", [f.message for f in net.failures]
    assert "self.block" in net.generated_code  # a leaf: called, not traced through
    assert "net.count" in net.generated_code or "count(" in net.generated_code
    assert modules["Block"].status == "failed"  # traced as its own root, still fails


def test_invalid_config_values_are_reported_and_defaulted(workspace: Workspace) -> None:
    workspace.write("pyproject.toml", textwrap.dedent("""
        [tool.fx-lsp]
        timeout = -3
        leaf-modules = "Block"
        surprise = 1
        """))
    config, problems = load_config(str(workspace.root))
    assert config.timeout == 20.0 and config.leaf_modules == []
    assert len(problems) == 3
    assert any("'timeout'" in p for p in problems)
    assert any("unknown option 'surprise'" in p for p in problems)
