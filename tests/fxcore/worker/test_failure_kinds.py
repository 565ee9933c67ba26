"""Each failure kind is reported on the user's own expression, with its exact range."""

from __future__ import annotations

import pytest

from fxcore.host.engine import Engine

from engine_support import CASES, Workspace, failure_span, line_of, span_of


@pytest.mark.parametrize(("kind", "code", "body", "expression"), CASES,
                         ids=[f"{case[0]}:{case[3]}" for case in CASES])
def test_kind_and_range(engine: Engine, workspace: Workspace, kind: str, code: str, body: str,
                        expression: str) -> None:
    indented_body = "\n".join("        " + line for line in body.splitlines())
    path = workspace.write(
        "net.py",
        "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
        f"    def forward(self, x):\n{indented_body}\n        return x\n",
    )
    result = workspace.check(engine, "net.py")
    (module,) = result.modules
    assert module.status == "failed"
    first = module.failures[0]
    assert (first.kind, first.code) == (kind, code)
    first_body_line = body.splitlines()[0].strip()
    line = line_of(path, first_body_line)
    if kind == "iteration":  # the iterable of the for header / comprehension, not the loop
        column = path.read_text().splitlines()[line - 1].rindex("x") + 1
        expected = (line, column, line, column + 1)
    else:
        expected = span_of(path, line, expression)
    assert failure_span(first) == expected
    assert first.path == str(path)
    assert [frame.function for frame in first.frames] == ["forward"]


def test_three_independent_failures_in_one_forward(engine: Engine, workspace: Workspace) -> None:
    path = workspace.write("net.py", """
        import torch
        from torch import nn


        class Net(nn.Module):
            def forward(self, x):
                n = len(x)
                scale = float(x.mean())
                if x.sum() > 0:
                    x = x + 1
                return x * n * scale
        """)
    (module,) = workspace.check(engine, "net.py").modules
    assert [(f.kind, f.line) for f in module.failures] == [
        ("len", line_of(path, "len(x)")),
        ("conversion", line_of(path, "float(x.mean())")),
        ("control-flow", line_of(path, "if x.sum()")),
    ]
    assert not any(f.possible_consequence for f in module.failures)


def test_failure_inside_recovered_branch_says_it_may_be_a_consequence(
        engine: Engine, workspace: Workspace) -> None:
    workspace.write("net.py", """
        import torch
        from torch import nn


        class Net(nn.Module):
            def forward(self, x):
                if x.sum() > 0:
                    x = x * len(x)
                return x
        """)
    (module,) = workspace.check(engine, "net.py").modules
    control_flow, length = module.failures
    assert not control_flow.possible_consequence
    assert length.possible_consequence
    assert "May be a consequence of the control-flow failure" in length.message


def test_non_ascii_text_before_the_expression(engine: Engine, workspace: Workspace) -> None:
    path = workspace.write("net.py", """
        import torch
        from torch import nn


        class Net(nn.Module):
            def forward(self, x):
                ñame = "日本語"; y = x + len(x)  # naïve
                return y
        """)
    (module,) = workspace.check(engine, "net.py").modules
    line = line_of(path, "ñame")
    assert failure_span(module.failures[0]) == span_of(path, line, "len(x)")


def test_loop_on_a_traced_value_terminates(engine: Engine, workspace: Workspace) -> None:
    workspace.write("net.py", """
        import torch
        from torch import nn


        class Net(nn.Module):
            def forward(self, x):
                while x.sum() > 0:
                    x = x - 1
                return x
        """)
    (module,) = workspace.check(engine, "net.py").modules
    assert [f.kind for f in module.failures] == ["control-flow"]


def test_recovery_goes_past_guard_clauses(engine: Engine, workspace: Workspace) -> None:
    path = workspace.write("net.py", """
        import torch
        from torch import nn


        class Net(nn.Module):
            def forward(self, x):
                if x.shape[0] == 0:
                    return x
                if x.sum() < 0:
                    raise ValueError("negative input")
                return x * len(x)
        """)
    (module,) = workspace.check(engine, "net.py").modules
    assert [(f.kind, f.line) for f in module.failures] == [
        ("control-flow", line_of(path, "x.shape[0] == 0")),
        ("control-flow", line_of(path, "x.sum() < 0")),
        ("len", line_of(path, "len(x)")),
    ]


@pytest.mark.parametrize(("body", "kind"), [("shape = list(x.shape)", "iteration"),
                                            ("y = torch.cat(*x.split(2))", "unpacking")])
def test_length_hint_after_iteration_is_not_a_second_failure(
        engine: Engine, workspace: Workspace, body: str, kind: str) -> None:
    workspace.write("net.py", f"""
        import torch
        from torch import nn


        class Net(nn.Module):
            def forward(self, x):
                {body}
                return x
        """)
    (module,) = workspace.check(engine, "net.py").modules
    assert [f.kind for f in module.failures] == [kind]


def test_a_traced_value_in_a_tensor_literal_is_one_len_failure(
        engine: Engine, workspace: Workspace) -> None:
    """``torch.tensor([x.shape[0] - 1])``: torch's C code walks the list as nested sequences
    and asks the Proxy's length. A stand-in length would lead it into the Proxy's elements,
    each a Proxy with a length again, until the worker's C stack overflows (SIGSEGV); torch's
    C code gets a plain Proxy's error instead, which it does not clear, so the trace stops
    there as plain torch.fx does: one FX002, on the call, and nothing after it."""
    path = workspace.write("net.py", """
        import torch
        from torch import nn


        class Net(nn.Module):
            def forward(self, x):
                counts = torch.tensor([1, x.shape[0] - 1])
                return x * counts.sum()
        """)
    (module,) = workspace.check(engine, "net.py").modules
    line = line_of(path, "torch.tensor([1, x.shape[0] - 1])")
    assert [(f.code, f.line) for f in module.failures] == [("FX002", line)]
    assert failure_span(module.failures[0]) == span_of(path, line,
                                                       "torch.tensor([1, x.shape[0] - 1])")


@pytest.mark.parametrize("container", ["[nn.Linear(4, 4), nn.Linear(4, 4)]",
                                       "nn.ModuleList([nn.Linear(4, 4), nn.Linear(4, 4)])",
                                       "nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4))"])
def test_a_traced_index_is_the_same_conversion_whatever_the_container(
        engine: Engine, workspace: Workspace, container: str) -> None:
    """Python converts the index of a list itself, ModuleList and Sequential with
    ``operator.index`` in torch's code: the same error, so the same code (FX004), on the
    user's subscript."""
    path = workspace.write("net.py", f"""
        from torch import nn


        class Pick(nn.Module):
            def __init__(self):
                super().__init__()
                self.layers = {container}

            def forward(self, x):
                return self.layers[x.argmax()](x)
        """)
    (module,) = workspace.check(engine, "net.py").modules
    first = module.failures[0]
    assert (first.code, first.kind) == ("FX004", "conversion"), first.message
    line = line_of(path, "self.layers[x.argmax()]")
    assert failure_span(first) == span_of(path, line, "self.layers[x.argmax()]")


def test_an_error_after_recovering_names_the_lines_it_may_follow_from(
        engine: Engine, workspace: Workspace) -> None:
    """The error that ended the trace is reported above the failures it may follow from
    (in a helper declared before the class): its note names their lines."""
    path = workspace.write("net.py", """
        import torch
        from torch import nn


        def checked(x):
            if not isinstance(x, torch.Tensor):
                raise TypeError("checked() takes a tensor")
            return x


        class Net(nn.Module):
            def forward(self, x):
                n = len(x)
                if x.sum() > 0:
                    x = x + n
                return checked(x)
        """)
    (module,) = workspace.check(engine, "net.py").modules
    length, control_flow, ending = module.failures
    assert ending.line == line_of(path, "raise TypeError") < length.line
    assert ending.possible_consequence
    assert ending.message.startswith(
        f"(May be a consequence of recovering from the failures at lines {length.line}, "
        f"{control_flow.line}.) Tracing stopped: TypeError: checked() takes a tensor")
