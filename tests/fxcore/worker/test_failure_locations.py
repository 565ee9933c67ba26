"""Where a failure is reported: in helpers, submodules and decorators of other files, in
third-party frames, and for syntax, import and constructor errors."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from fxcore.host.engine import Engine

from engine_support import Workspace, failure_span, line_of, span_of


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


def test_a_compiled_extension_s_relative_source_name_is_not_a_workspace_file(
        engine: Engine, workspace: Workspace) -> None:
    """numpy's Cython code names its source ``numpy/random/mtrand.pyx``: joined to the working
    folder, that named a file of the workspace that does not exist (pytorchcv's
    CIFARFractalNet showed ``models/numpy/random/mtrand.pyx:3509``)."""
    net = workspace.write("models/net.py", """
        import numpy as np
        from torch import nn


        class Dropper(nn.Module):
            def forward(self, x):
                keep = np.random.binomial(n=1, p=0.5, size=x.shape[0])  # numpy on a Proxy
                return x * float(keep[0])
        """)
    (module,) = workspace.check(engine, "models/net.py").modules
    line = line_of(net, "# numpy on a Proxy")
    # FX003 where the traced size reaches numpy, then numpy's own error, on the same line.
    assert [(failure.code, failure.path, failure.line) for failure in module.failures] == [
        ("FX003", str(net), line), ("FX199", str(net), line)]
    assert [(frame.path, frame.line) for frame in module.failures[1].frames] == [
        (str(net), line), ("numpy/random/mtrand.pyx", module.failures[1].frames[1].line)]
