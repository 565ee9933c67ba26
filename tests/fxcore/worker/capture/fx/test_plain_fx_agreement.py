"""The first failure is exactly the one plain ``torch.fx.symbolic_trace`` raises, and a
module with no failure gets the same generated code."""

from __future__ import annotations

from pathlib import Path

import pytest
from plain_tracing import plain_failure_frame, plain_trace

from fxcore.host.engine import Engine
from fxcore.model.job_spec import TraceJob
from fxcore.workspace.config import load_config

from engine_support import CASES, EXAMPLES, Workspace, check_job

#: Compared with real torch on the installed torch: run under every torch series too.
pytestmark = pytest.mark.matrix

#: How each kind shows up when plain tracing raises.
PLAIN_SIGNATURES = {
    "control-flow": "cannot be used as inputs to control flow",
    "len": "'len' is not supported",
    "iteration": "cannot be iterated",
    "contains": "cannot be iterated",
    "unpacking": "cannot be iterated",
    "conversion": "Proxy",
    "mutation": "does not support item assignment",
    # Whatever einops raised ("Tensor type unknown to einops", a KeyError in a layer): the
    # failing frames decide FX008, as tests/fxcore/worker/test_einops_on_traced_values.py checks.
    "einops": "",
    "error": "",
}


def assert_agrees(engine: Engine, path: Path, root: Path) -> int:
    """Compare every traced class of a file with plain tracing; returns classes compared."""
    result = check_job(engine, TraceJob(path=str(path), workspace_root=str(root),
                                        config=load_config(str(root))[0]))
    compared = 0
    for module in result.modules:
        if module.status == "not-traced":
            continue
        error, plain_code = plain_trace(path, root, module.class_name, module.arguments)
        compared += 1
        if error is None:
            assert module.status == "traceable", (module.class_name, module.failures)
            assert module.generated_code.strip() == plain_code.strip()
            continue
        assert module.status == "failed", module.class_name
        first = module.failures[0]
        assert PLAIN_SIGNATURES[first.kind] in str(error), (first.kind, error)
        plain_here = plain_failure_frame(error, root)
        assert plain_here is not None
        assert (first.path, first.line, first.column, first.end_line, first.end_column) == (
            plain_here.path, plain_here.line, plain_here.column, plain_here.end_line,
            plain_here.end_column), module.class_name
    return compared


@pytest.mark.parametrize("example", sorted(p.name for p in (EXAMPLES / "models").glob("*.py")))
def test_examples_agree_with_plain_tracing(engine: Engine, example: str) -> None:
    assert_agrees(engine, EXAMPLES / "models" / example, EXAMPLES)


@pytest.mark.parametrize(("kind", "code", "body", "expression"), CASES,
                         ids=[f"{case[0]}:{case[3]}" for case in CASES])
def test_each_kind_agrees_with_plain_tracing(engine: Engine, workspace: Workspace, kind: str,
                                             code: str, body: str, expression: str) -> None:
    indented_body = "\n".join("        " + line for line in body.splitlines())
    module_name = f"fidelity_{abs(hash(body))}"
    path = workspace.write(
        f"{module_name}.py",
        "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
        f"    def forward(self, x):\n        y = x.relu()  # a node before the failure\n"
        f"{indented_body}\n        return x\n",
    )
    assert assert_agrees(engine, path, workspace.root) == 1


#: Bodies where torch's argument parser meets a Proxy: plain tracing records the call.
PARSER_CASES = [
    "return torch.zeros(x.shape) + x",
    "return torch.zeros((x.shape[0], x.shape[1])) + x",
    "return self.table.narrow(0, 0, x.shape[1]) + x",
    "return torch.ones(x.size(0), 3, 4, 5, 'x')",  # plain tracing raises: so must fx-lsp
    "return torch.full((2, 2), x.sum())",
]


@pytest.mark.parametrize("body", PARSER_CASES)
def test_torch_argument_parsing_agrees_with_plain_tracing(engine: Engine, workspace: Workspace,
                                                          body: str) -> None:
    module_name = f"parser_{abs(hash(body))}"
    path = workspace.write(
        f"{module_name}.py",
        "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n"
        "        self.register_buffer('table', torch.zeros(16, 4))\n\n"
        f"    def forward(self, x):\n        {body}\n",
    )
    assert assert_agrees(engine, path, workspace.root) == 1


def test_a_graph_torch_fx_cannot_write_fails_as_plain_tracing_does(
        engine: Engine, workspace: Workspace) -> None:
    """A submodule name with a double quote: torch.fx traces forward, then its code
    generation writes ``getattr(self, "...")`` and fails to compile it. Plain tracing raises
    SyntaxError; fx-lsp reports the class failed (FX199 at its name), not a crashed worker."""
    path = workspace.write("names.py", '''
        from torch import nn


        class Quoted(nn.Module):
            def __init__(self):
                super().__init__()
                self.add_module('say "hi"', nn.Linear(4, 4))

            def forward(self, x):
                return getattr(self, 'say "hi"')(x)
        ''')
    error, _ = plain_trace(path, workspace.root, "Quoted")
    assert isinstance(error, SyntaxError)
    result = check_job(engine, TraceJob(path=str(path), workspace_root=str(workspace.root)))
    assert result.errors == []
    (module,) = result.modules
    (failure,) = module.failures
    assert (module.status, failure.code, failure.line, failure.column) == ("failed", "FX199", 4, 7)
    assert failure.message.startswith("torch.fx traced forward but cannot write the graph's "
                                      "Python code (SyntaxError: ")
