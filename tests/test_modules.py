"""Finding, importing, building and tracing modules the way users write them."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest

from fxcore.config import load_config
from fxcore.engine import Engine
from fxcore.model import EngineConfig, ModuleConfig

from engine_support import Workspace, failure_span, line_of, span_of


def test_only_own_modules_with_a_forward_are_found(engine: Engine, workspace: Workspace) -> None:
    workspace.write("net.py", """
        import torch
        from torch import nn
        from torch.nn import Linear  # imported, not defined here


        class Base(nn.Module):
            "No forward anywhere: an abstract base, skipped."


        class Mixin:
            pass


        class Net(Base, Mixin):
            def forward(self, x):
                return x * 2


        class Inherits(Net):
            pass
        """)
    result = workspace.check(engine, "net.py")
    assert [m.class_name for m in result.modules] == ["Net", "Inherits"]
    net = result.modules[0]
    path = workspace.root / "net.py"
    name_line = line_of(path, "class Net")
    assert (net.line, net.column, net.end_line, net.end_column) == span_of(path, name_line, "Net")
    assert net.forward is not None and net.forward.line == line_of(path, "def forward")
    assert result.modules[1].forward is None


def test_helper_in_another_file_of_a_package(engine: Engine, workspace: Workspace) -> None:
    workspace.write("pkg/__init__.py", "")
    ops = workspace.write("pkg/ops.py", """
        def gate(x):
            if x.mean() > 0:
                return x
            return -x
        """)
    net = workspace.write("pkg/net.py", """
        from torch import nn

        from .ops import gate


        class Net(nn.Module):
            def forward(self, x):
                return gate(x)
        """)
    (module,) = workspace.check(engine, "pkg/net.py").modules
    (failure,) = module.failures
    assert failure.path == str(ops)
    assert failure_span(failure) == span_of(ops, 2, "x.mean() > 0")
    assert [(Path(f.path).name, f.line, f.function) for f in failure.frames] == [
        ("net.py", line_of(net, "return gate(x)"), "forward"),
        ("ops.py", 2, "gate"),
    ]


def test_submodule_defined_in_another_file(engine: Engine, workspace: Workspace) -> None:
    workspace.write("models/__init__.py", "")
    layers = workspace.write("models/layers.py", """
        from torch import nn


        class Block(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)

            def forward(self, x):
                return self.fc(x) * len(x)
        """)
    workspace.write("models/net.py", """
        from torch import nn

        from models.layers import Block


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.block = Block()

            def forward(self, x):
                return self.block(x)
        """)
    (module,) = workspace.check(engine, "models/net.py").modules
    (failure,) = module.failures
    assert (failure.kind, failure.path) == ("len", str(layers))
    assert failure_span(failure) == span_of(layers, 10, "len(x)")
    assert [f.function for f in failure.frames] == ["forward", "forward"]


def test_third_party_frames_stay_in_the_chain(engine: Engine, workspace: Workspace,
                                              tmp_path_factory: pytest.TempPathFactory,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    library = tmp_path_factory.mktemp("site") / "site-packages"
    (library / "thirdlib").mkdir(parents=True)
    (library / "thirdlib" / "__init__.py").write_text(textwrap.dedent("""
        def normalize(x):
            if x.std() > 1:
                return x / x.std()
            return x
        """).lstrip())
    monkeypatch.syspath_prepend(str(library))
    net = workspace.write("net.py", f"""
        import sys
        sys.path.insert(0, {str(library)!r})
        from torch import nn
        import thirdlib


        class Net(nn.Module):
            def forward(self, x):
                return thirdlib.normalize(x)
        """)
    (module,) = workspace.check(engine, "net.py").modules
    (failure,) = module.failures
    # Located on the user's call; the library frame is the innermost of the chain.
    assert failure.path == str(net)
    assert failure_span(failure) == span_of(net, line_of(net, "thirdlib.normalize(x)"),
                                            "thirdlib.normalize(x)")
    assert failure.frames[-1].path == str(library / "thirdlib" / "__init__.py")
    assert failure.frames[-1].line == 2


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


def test_syntax_error_is_reported_where_it_is(engine: Engine, workspace: Workspace) -> None:
    workspace.write("broken.py", "import torch\n\ndef f(:\n    pass\n")
    result = workspace.check(engine, "broken.py")
    (error,) = result.errors
    assert (error.code, error.kind, error.line) == ("FX100", "import", 3)
    assert "SyntaxError" in error.message
    assert result.modules == []


def test_import_error_is_reported_on_the_import(engine: Engine, workspace: Workspace) -> None:
    path = workspace.write("net.py",
                           "import torch\nimport not_a_real_package\nclass Net: ...\n")
    (error,) = workspace.check(engine, "net.py").errors
    assert (error.code, error.kind) == ("FX100", "import")
    assert failure_span(error) == span_of(path, 2, "import not_a_real_package")
    assert "ModuleNotFoundError" in error.message


def test_constructor_error_is_reported_in_the_constructor(engine: Engine,
                                                          workspace: Workspace) -> None:
    path = workspace.write("net.py", """
        from torch import nn


        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                raise ValueError("bad config")

            def forward(self, x):
                return x
        """)
    (module,) = workspace.check(engine, "net.py").modules
    (failure,) = module.failures
    assert (failure.code, failure.kind, module.status) == ("FX101", "constructor", "failed")
    assert failure.line == line_of(path, "raise ValueError")
    assert "ValueError: bad config" in failure.message


@pytest.mark.parametrize("layout", ["src", "script-folder", "nested-package"])
def test_import_names_follow_the_layout(engine: Engine, workspace: Workspace,
                                        layout: str) -> None:
    model = """
        from torch import nn
        from {import_from} import helper


        class Net(nn.Module):
            def forward(self, x):
                return helper(x)
        """
    helper = "def helper(x):\n    return x + 1\n"
    if layout == "src":
        workspace.write("src/proj/__init__.py", "")
        workspace.write("src/proj/util.py", helper)
        target = "src/proj/net.py"
        workspace.write(target, model.format(import_from="proj.util"))
        expected = "proj.net:Net"
    elif layout == "script-folder":
        workspace.write("scripts/util.py", helper)
        target = "scripts/net.py"
        workspace.write(target, model.format(import_from="util"))
        expected = "net:Net"
    else:
        workspace.write("a/__init__.py", "")
        workspace.write("a/b/__init__.py", "")
        workspace.write("a/util.py", helper)
        target = "a/b/net.py"
        workspace.write(target, model.format(import_from="..util"))
        expected = "a.b.net:Net"
    (module,) = workspace.check(engine, target).modules
    assert (module.qualified_name, module.status) == (expected, "traceable")


def test_unsaved_buffers_replace_files_in_imports(engine: Engine, workspace: Workspace) -> None:
    workspace.write("pkg/__init__.py", "")
    layers = workspace.write("pkg/layers.py", "def act(x):\n    return x.relu()\n")
    workspace.write("pkg/net.py", """
        from torch import nn

        from .layers import act


        class Net(nn.Module):
            def forward(self, x):
                return act(x)
        """)
    assert workspace.check(engine, "pkg/net.py").modules[0].status == "traceable"
    edited = "def act(x):\n    return x.relu() * len(x)\n"
    result = workspace.check(engine, "pkg/net.py", overlays={str(layers): edited})
    (failure,) = result.modules[0].failures
    assert (failure.kind, failure.path, failure.line) == ("len", str(layers), 2)
    assert str(layers) in result.imported_files
    # The file on disk was not touched, and no bytecode was written for the buffer.
    assert "len" not in layers.read_text()


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
    nodes = module.line_nodes[f"{path}:{line}"]
    assert [(n.name, n.op, n.target) for n in nodes] == [
        ("first", "call_module", "first"), ("second", "call_module", "second")]
    relu_line = module.line_nodes[f"{path}:{line + 1}"]
    assert ("relu", "call_function", "torch.relu") in [(n.name, n.op, n.target)
                                                        for n in relu_line]


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


def test_failures_in_a_decorator_around_forward_land_on_the_forward(
        engine: Engine, workspace: Workspace) -> None:
    path = workspace.write("deco.py", """
        import functools
        from torch import nn


        def checked(fn):
            @functools.wraps(fn)
            def wrapper(self, *args, **kwargs):
                out = fn(self, *args, **kwargs)
                if out.sum() > 0:
                    return out
                return -out
            return wrapper


        def passthrough(fn):
            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                return fn(*args, **kwargs)
            return wrapper


        class Checked(nn.Module):
            @checked
            def forward(self, x):
                return x + 1


        class KwargsForward(nn.Module):
            @passthrough
            def forward(self, x, **kwargs):
                return x + 1
        """)
    modules = {m.class_name: m for m in workspace.check(engine, "deco.py").modules}
    (control_flow,) = modules["Checked"].failures
    forward_line = line_of(path, "def forward(self, x):")
    assert failure_span(control_flow) == span_of(path, forward_line, "forward")
    assert control_flow.kind == "control-flow"
    assert control_flow.message.startswith("In the decorator `checked` around forward")
    assert control_flow.frames[-1].function == "wrapper"  # the chain still shows where

    (patch_error,) = modules["KwargsForward"].failures
    kwargs_line = line_of(path, "def forward(self, x, **kwargs):")
    assert failure_span(patch_error) == span_of(path, kwargs_line, "forward")
    assert "`passthrough`" in patch_error.message
    assert "co_varnames is too small" in patch_error.message
