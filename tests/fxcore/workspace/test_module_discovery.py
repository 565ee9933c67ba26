"""Which classes are found and under which import name; unsaved buffers in imports."""

from __future__ import annotations

import pytest

from fxcore.host.engine import Engine

from engine_support import Workspace, line_of, span_of


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


def test_abstract_bases_and_forwards_that_only_raise_are_skipped_with_a_reason(
        engine: Engine, workspace: Workspace) -> None:
    """Bases left for subclasses are not traced (an instance of them would be an artefact
    fx-lsp made up); their subclasses are, and a raise that is not the whole body is traced."""
    workspace.write("bases.py", """
        import abc

        from torch import nn


        class Transform(nn.Module, abc.ABC):
            def __init__(self, width: int = 4):
                super().__init__()
                self.width = width

            @abc.abstractmethod
            def transform(self, x): ...

            def forward(self, x):
                return self.transform(x)


        class Head(nn.Module):
            def __init__(self, width: int):
                super().__init__()
                self.linear = nn.Linear(width, width)

            def forward(self, x):
                \"\"\"Subclasses implement this.\"\"\"
                raise NotImplementedError(f"{type(self).__name__} has no forward")


        class SameHead(Head):
            pass


        class Doubled(Transform):
            def transform(self, x):
                return x * 2


        class LinearHead(Head):
            def forward(self, x):
                return self.linear(x)


        class Guarded(nn.Module):
            def forward(self, x):
                if x is None:
                    raise NotImplementedError
                return x
        """)
    modules = {m.class_name: m for m in workspace.check(engine, "bases.py").modules}
    assert {name: m.status for name, m in modules.items()} == {
        "Transform": "not-traced", "Head": "not-traced", "SameHead": "not-traced",
        "Doubled": "traceable", "LinearHead": "traceable", "Guarded": "traceable"}
    assert modules["Transform"].reason == ("Skipped: an abstract class (abstract methods: "
                                           "transform); its concrete subclasses are traced.")
    assert modules["Head"].reason == ("Skipped: its forward only raises NotImplementedError; "
                                      "the subclasses that implement it are traced.")
    assert modules["SameHead"].reason == ("Skipped: Head's forward only raises "
                                          "NotImplementedError; the subclasses that implement "
                                          "it are traced.")
    assert all(not m.failures for m in modules.values())


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
