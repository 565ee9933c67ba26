"""What a traceable class's result holds."""

from __future__ import annotations

from fxcore.host.engine import Engine

from engine_support import Workspace, line_of


def test_results_of_a_traceable_module(engine: Engine, workspace: Workspace) -> None:
    path = workspace.write("net.py", """
        import torch
        from torch import nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.first = nn.Linear(4, 4)
                self.second = nn.Linear(4, 4)
                self.unused = nn.Linear(4, 4)
                self.gain = nn.Parameter(torch.ones(4))
                self.bias = nn.Parameter(torch.zeros(4))

            def forward(self, x):
                x = self.second(self.first(x))
                return torch.relu(x) * self.gain
        """)
    (module,) = workspace.check(engine, "net.py").modules
    assert module.status == "traceable"
    assert "def forward(self, x):" in module.generated_code
    assert module.module_order == ["first", "second"]
    assert module.parameter_order[:2] == ["first.weight", "first.bias"]
    assert "gain" in module.parameter_order
    hints = {hint.member: hint for hint in module.hints}
    assert set(hints) == {"unused", "bias"}
    assert (hints["unused"].code, hints["unused"].line) == ("FX200", line_of(path, "self.unused"))
    line = line_of(path, "self.second(self.first(x))")
    nodes = module.line_nodes[(str(path), line)]
    assert [(n.name, n.op, n.target) for n in nodes] == [
        ("first", "call_module", "first"), ("second", "call_module", "second")]
    relu_line = module.line_nodes[(str(path), line + 1)]
    assert ("relu", "call_function", "torch.relu") in [(n.name, n.op, n.target)
                                                        for n in relu_line]
