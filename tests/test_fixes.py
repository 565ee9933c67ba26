"""fxcore.fixes: each transform does its one edit, keeps formatting and is idempotent."""

from __future__ import annotations

import textwrap

import tomlkit

from fxcore import fixes


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
    created = fixes.add_leaf_module("", "pkg.layers:Block")
    assert created == '[tool.fx-lsp]\nleaf-modules = ["pkg.layers:Block"]\n'
    assert fixes.add_leaf_module(created, "pkg.layers:Block") == created

    existing = _src(
        """
        [project]
        name = "demo"  # a comment

        [tool.fx-lsp]
        leaf-modules = ["a:B"]
        """
    )
    edited = fixes.add_leaf_module(existing, "pkg.layers:Block")
    assert 'name = "demo"  # a comment' in edited
    assert tomlkit.parse(edited)["tool"]["fx-lsp"]["leaf-modules"] == ["a:B", "pkg.layers:Block"]


def test_add_concrete_arg() -> None:
    source = '[project]\nname = "demo"\n'
    edited = fixes.add_concrete_arg(source, "pkg.net:Net", "flag", False)
    assert edited == (
        '[project]\nname = "demo"\n\n'
        '[tool.fx-lsp.modules."pkg.net:Net"]\nconcrete-args = {flag = false}\n'
    )
    assert fixes.add_concrete_arg(edited, "pkg.net:Net", "flag", False) == edited
    both = fixes.add_concrete_arg(edited, "pkg.net:Net", "mode", "fast")
    parsed = tomlkit.parse(both)["tool"]["fx-lsp"]["modules"]["pkg.net:Net"]
    assert parsed["concrete-args"] == {"flag": False, "mode": "fast"}
