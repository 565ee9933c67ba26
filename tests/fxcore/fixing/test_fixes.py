"""fxcore.fixing.fixes: each transform does its one edit, keeps formatting and is idempotent."""

from __future__ import annotations

import textwrap

import tomlkit

from fxcore.fixing import fixes, pt2_fixes, pyproject_fixes


def _src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def test_wrap_len_after_imports_adds_import_torch_fx() -> None:
    source = _src(
        '''
        """Doc."""
        from __future__ import annotations

        import torch
        from torch import nn  # keep this comment


        class Net(nn.Module):
            def forward(self, x):
                return len(x)
        '''
    )
    fixed = fixes.wrap_len(source)
    assert fixed == _src(
        '''
        """Doc."""
        from __future__ import annotations

        import torch
        from torch import nn  # keep this comment
        import torch.fx

        torch.fx.wrap("len")


        class Net(nn.Module):
            def forward(self, x):
                return len(x)
        '''
    )
    assert fixes.wrap_len(fixed) == fixed
    compile(fixed, "net.py", "exec")


def test_wrap_len_spelled_like_the_file_imports_fx() -> None:
    assert 'fx.wrap("len")' in fixes.wrap_len("import torch.fx as fx\n")
    assert 'F.wrap("len")' in fixes.wrap_len("from torch import fx as F\n")
    assert 'fx.wrap("len")' in fixes.wrap_len("from torch import fx\n")
    assert '\nwrap("len")' in fixes.wrap_len("from torch.fx import wrap\n")
    spelled = fixes.wrap_len("import torch.fx\nimport os\n")
    assert spelled == 'import torch.fx\nimport os\n\ntorch.fx.wrap("len")\n'


def test_wrap_len_recognises_an_existing_call_in_any_spelling() -> None:
    source = 'import torch.fx as fx\n\nfx.wrap("len")\n'
    assert fixes.wrap_len(source) == source
    other = "from torch.fx import wrap\nwrap('len')\n"
    assert fixes.wrap_len(other) == other


def test_len_to_size_replaces_only_the_call_at_the_position() -> None:
    source = _src(
        """
        class Net:
            def forward(self, x):
                # é: a non-ASCII comment does not shift character columns
                return x[: len(x)] + len(x + 1)  # trailing
        """
    )
    line = source.splitlines()[3]
    first = fixes.len_to_size(source, 4, line.index("len(x)") + 1)
    assert "return x[: x.size(0)] + len(x + 1)  # trailing" in first
    assert fixes.len_to_size(first, 4, line.index("len(x)") + 1) == first
    second_column = first.splitlines()[3].index("len(x +") + 1
    second = fixes.len_to_size(first, 4, second_column)
    assert "return x[: x.size(0)] + (x + 1).size(0)  # trailing" in second


def test_len_to_size_without_a_call_there_changes_nothing() -> None:
    source = "y = len(x)\n"
    assert fixes.len_to_size(source, 1, 1) == source


def test_wrap_function_decorates_the_helper_once() -> None:
    source = _src(
        """
        import torch.fx as fx


        def helper(x):  # comment
            if x.sum() > 0:
                return x
            return -x
        """
    )
    fixed = fixes.wrap_function(source, "helper")
    assert "@fx.wrap\ndef helper(x):  # comment\n" in fixed
    assert fixes.wrap_function(fixed, "helper") == fixed
    assert fixes.wrap_function(source, "missing") == source


def test_wrap_function_adds_import_with_blank_lines() -> None:
    fixed = fixes.wrap_function("def helper(x):\n    return x\n", "helper")
    assert fixed == "import torch.fx\n\n\n@torch.fx.wrap\ndef helper(x):\n    return x\n"


def test_module_function_names() -> None:
    source = "def a():\n    pass\n\nclass B:\n    def c(self):\n        pass\n"
    assert fixes.module_function_names(source) == ["a"]


def test_plain_forward_arguments() -> None:
    source = _src(
        """
        class Net:
            def forward(self, x, flag: bool = False, n=3, scale=-0.5, *, mode: str, t=None):
                return x
        """
    )
    assert fixes.plain_forward_arguments(source, "Net") == {
        "flag": False,
        "n": 3,
        "scale": -0.5,
        "mode": "",
    }
    assert fixes.plain_forward_arguments(source, "Other") == {}


def test_add_leaf_module_creates_and_keeps_formatting() -> None:
    created = pyproject_fixes.add_leaf_module("", "pkg.layers:Block")
    assert created == '[tool.fx-lsp]\nleaf-modules = ["pkg.layers:Block"]\n'
    assert pyproject_fixes.add_leaf_module(created, "pkg.layers:Block") == created

    existing = _src(
        """
        [project]
        name = "demo"  # a comment

        [tool.fx-lsp]
        leaf-modules = ["a:B"]
        """
    )
    edited = pyproject_fixes.add_leaf_module(existing, "pkg.layers:Block")
    assert 'name = "demo"  # a comment' in edited
    assert tomlkit.parse(edited)["tool"]["fx-lsp"]["leaf-modules"] == ["a:B", "pkg.layers:Block"]


def test_add_concrete_arg() -> None:
    source = '[project]\nname = "demo"\n'
    edited = pyproject_fixes.add_concrete_arg(source, "pkg.net:Net", "flag", False)
    assert edited == (
        '[project]\nname = "demo"\n\n'
        '[tool.fx-lsp.modules."pkg.net:Net"]\nconcrete-args = {flag = false}\n'
    )
    assert pyproject_fixes.add_concrete_arg(edited, "pkg.net:Net", "flag", False) == edited
    both = pyproject_fixes.add_concrete_arg(edited, "pkg.net:Net", "mode", "fast")
    parsed = tomlkit.parse(both)["tool"]["fx-lsp"]["modules"]["pkg.net:Net"]
    assert parsed["concrete-args"] == {"flag": False, "mode": "fast"}


# torch.export and torch.compile

PT2_MODEL = _src(
    '''
    import logging

    import torch as th
    from torch import nn

    log = logging.getLogger(__name__)


    class Net(nn.Module):
        def forward(self, x):
            # the input must be positive
            assert (x > 0).all(), "positive"  # checked
            n = int((x > 0).sum().item())
            log.warning("n = %s", n)  # noisy
            return x[:, :n] * float(x.max().item())
    '''
)


def test_assert_becomes_assert_async_with_its_message_and_comments() -> None:
    fixed = pt2_fixes.assert_to_assert_async(PT2_MODEL, 12, 16)
    assert "        # the input must be positive\n" \
           '        th._assert_async((x > 0).all(), "positive")  # checked\n' in fixed
    assert pt2_fixes.assert_to_assert_async(fixed, 12, 16) == fixed
    assert pt2_fixes.assert_to_assert_async(PT2_MODEL, 12, 17) == PT2_MODEL  # not the condition
    compile(fixed, "net.py", "exec")


def test_assert_with_a_computed_message_is_left_alone() -> None:
    # torch._assert_async evaluates its message on every call; assert only on failure.
    for message in ('f"bad {x}"', "describe(x)", 'b"bytes"'):
        source = f"import torch\nassert x.any(), {message}\n"
        assert pt2_fixes.assert_to_assert_async(source, 2, 8) == source
    kept = pt2_fixes.assert_to_assert_async('assert x.any(), "a" "b"; y = 1\n', 1, 8)
    assert kept == 'torch._assert_async(x.any(), "a" "b"); y = 1\n'


def test_int_and_float_of_an_item_become_symbolic_casts() -> None:
    fixed = pt2_fixes.cast_to_symbolic(PT2_MODEL, 13, 13)
    assert "n = th.sym_int((x > 0).sum().item())" in fixed
    fixed = pt2_fixes.cast_to_symbolic(fixed, 15, 27)
    assert "x[:, :n] * th.sym_float(x.max().item())" in fixed
    assert pt2_fixes.cast_to_symbolic(fixed, 15, 27) == fixed
    for other in ("int(x)", "int(x.item(), 2)", "round(x.item())", "int(x.item)"):
        source = f"y = {other}\n"
        assert pt2_fixes.cast_to_symbolic(source, 1, 5) == source


def test_logging_call_runs_only_outside_compile() -> None:
    fixed = pt2_fixes.skip_when_compiling(PT2_MODEL, 14, 20)  # inside the call
    assert "            return x" not in fixed
    assert "        if not th.compiler.is_compiling():\n" \
           '            log.warning("n = %s", n)  # noisy\n' in fixed
    assert pt2_fixes.skip_when_compiling(fixed, 14, 20) == fixed
    compile(fixed, "net.py", "exec")
    for shared in ("y = 1; print(y)\n", "if y: print(y)\n", "y = print(1)\n",
                   "compute(y)\n"):
        assert pt2_fixes.skip_when_compiling(shared, 1, 1) == shared


def test_torch_import_added_only_when_no_import_binds_it() -> None:
    bare = '"""Doc."""\nfrom torch import nn\n\n\nclass Net(nn.Module):\n    pass\n'
    assert pt2_fixes.ensure_torch_import(bare) == \
        '"""Doc."""\nfrom torch import nn\nimport torch\n\n\nclass Net(nn.Module):\n    pass\n'
    for bound in ("import torch\n", "import torch.nn.functional\n", "import torch as th\n"):
        assert pt2_fixes.ensure_torch_import(bound) == bound
    # `import torch.nn as nn` binds nn, not torch.
    assert "import torch\n" in pt2_fixes.ensure_torch_import("import torch.nn as nn\n")
    assert "th.sym_int" in pt2_fixes.cast_to_symbolic("import torch as th\nn = int(t.item())\n",
                                                   2, 5)


DYNAMIC = _src(
    '''
    [tool.fx-lsp.modules."net:Net"]
    inputs = {x = "float32[4, 8]", y = "float32[4, 8]"}
    dynamic = {x = {0 = {name = "batch", min = 2, max = 64}}, y = {0 = "batch", 1 = "width"}}
    '''
)


def test_dynamic_suggestion_sets_the_bounds_torch_gives_and_keeps_the_others() -> None:
    fixed = pyproject_fixes.apply_dynamic_suggestion(DYNAMIC, "net:Net", "Net", "batch", (None, 16))
    table = tomlkit.parse(fixed)["tool"]["fx-lsp"]["modules"]["net:Net"]["dynamic"]
    assert table == {"x": {"0": {"name": "batch", "min": 2, "max": 16}},
                     "y": {"0": {"name": "batch", "max": 16}, "1": "width"}}
    assert pyproject_fixes.apply_dynamic_suggestion(
        fixed, "net:Net", "Net", "batch", (None, 16)) == fixed


def test_dynamic_suggestion_of_a_size_makes_the_dimension_static() -> None:
    fixed = pyproject_fixes.apply_dynamic_suggestion(DYNAMIC, "net:Net", "Net", "batch", None)
    table = tomlkit.parse(fixed)["tool"]["fx-lsp"]["modules"]["net:Net"]
    assert table["dynamic"] == {"y": {"1": "width"}}
    fixed = pyproject_fixes.apply_dynamic_suggestion(fixed, "net:Net", "Net", "width", None)
    # The empty table stays: the shapes are meant static (no FX407 where the code pins them).
    assert tomlkit.parse(fixed)["tool"]["fx-lsp"]["modules"]["net:Net"]["dynamic"] == {}
    bare = DYNAMIC.replace('"net:Net"', "Net")  # the bare class name's table, as read
    assert tomlkit.parse(pyproject_fixes.apply_dynamic_suggestion(
        pyproject_fixes.apply_dynamic_suggestion(bare, "net:Net", "Net", "batch", None),
        "net:Net", "Net", "width", None))["tool"]["fx-lsp"]["modules"]["Net"]["dynamic"] == {}
    assert pyproject_fixes.apply_dynamic_suggestion(
        DYNAMIC, "net:Other", "Other", "batch", None) == DYNAMIC
