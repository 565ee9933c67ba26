"""Building instances: the meta device first, then the CPU; constructor arguments from
config or a factory."""

from __future__ import annotations

import dataclasses

from fxcore.host.engine import Engine
from fxcore.model.job_spec import EngineConfig, ModuleConfig

from engine_support import Workspace


def test_meta_first_then_cpu_when_the_constructor_needs_values(
        engine: Engine, workspace: Workspace) -> None:
    workspace.write("net.py", """
        import torch
        from torch import nn


        class OnMeta(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4096, 4096)

            def forward(self, x):
                return self.fc(x)


        class NeedsValues(nn.Module):
            def __init__(self):
                super().__init__()
                self.steps = int(torch.arange(4).sum().item())

            def forward(self, x):
                return x * self.steps
        """)
    modules = {m.class_name: m for m in workspace.check(engine, "net.py").modules}
    assert modules["OnMeta"].instantiated_on == "meta"
    assert modules["NeedsValues"].instantiated_on == "cpu"
    assert modules["NeedsValues"].status == "traceable"


def test_constructor_arguments_from_config_or_factory(engine: Engine,
                                                      workspace: Workspace) -> None:
    workspace.write("net.py", """
        from torch import nn


        class Wide(nn.Module):
            def __init__(self, width, depth=2):
                super().__init__()
                self.layers = nn.Sequential(*[nn.Linear(width, width) for _ in range(depth)])

            def forward(self, x):
                return self.layers(x)


        def make_wide():
            return Wide(width=8, depth=3)


        class Unconfigured(nn.Module):
            def __init__(self, width, *, bias):
                super().__init__()

            def forward(self, x):
                return x
        """)
    by_kwargs = EngineConfig(modules={"net:Wide": ModuleConfig(kwargs={"width": 16})})
    modules = {m.class_name: m for m in workspace.check(engine, "net.py", by_kwargs).modules}
    assert (modules["Wide"].status, modules["Wide"].instantiated_on) == ("traceable", "meta")
    assert modules["Unconfigured"].arguments.origin == "guessed"
    no_guessing = dataclasses.replace(by_kwargs, guess_arguments=False)
    unconfigured = {m.class_name: m for m in
                    workspace.check(engine, "net.py", no_guessing).modules}["Unconfigured"]
    assert unconfigured.status == "not-traced"
    assert "width, bias" in unconfigured.reason
    assert '[tool.fx-lsp.modules."net:Unconfigured"]' in unconfigured.reason

    by_factory = EngineConfig(modules={"Wide": ModuleConfig(factory="net:make_wide")})
    wide = workspace.check(engine, "net.py", by_factory).modules[0]
    assert (wide.status, wide.instantiated_on) == ("traceable", "factory")
    assert wide.node_count == 5  # placeholder, three linears, output
