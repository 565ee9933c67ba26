"""Literal calls read statically (``fxcore.workspace.call_sites``): a bare name given as an
argument is
read as the literal call it was last bound to in the same scope, and a class's later calls
are chosen by what they add, not by where they are written; through the real CLI."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from fxcore.model.job_spec import MAX_OTHER_CALL_SITES, CallSite
from fxcore.workspace.call_sites import (
    MAX_PARAMETER_COMBINATIONS,
    MAX_SUBSTITUTED_DEPTH,
    MAX_SUBSTITUTED_NODES,
    calls_in_markdown,
    calls_in_notebook,
    calls_in_source,
    most_varied,
)

from cli_support import fx_lsp
from engine_support import REPO_ROOT, Workspace

sys.path.insert(0, str(REPO_ROOT))
from benchmarks.fidelity.plain_fx_check import disagreement, plain_verdicts

WRAPPER_README = """\
    ```python
    import torch
    from x_transformers import TransformerWrapper, Decoder, AutoregressiveWrapper

    model = TransformerWrapper(
        num_tokens = 20000,
        attn_layers = Decoder(dim = 512, depth = 12)
    ).cuda()

    model = AutoregressiveWrapper(
        model,
        mask_prob = 0.15
    ).cuda()
    ```
"""


def test_a_bare_name_argument_is_read_as_the_call_it_was_bound_to() -> None:
    found = calls_in_markdown(textwrap.dedent(WRAPPER_README), "README.md")
    wrapper = [site for name, site in found if name == "AutoregressiveWrapper"]
    assert wrapper == [CallSite(
        site="README.md:10",
        args=("TransformerWrapper(num_tokens=20000, attn_layers=Decoder(dim=512, depth=12))",),
        kwargs=(("mask_prob", "0.15"),))]


def test_a_binding_holds_only_in_its_scope_until_the_name_is_bound_otherwise() -> None:
    source = textwrap.dedent('''\
        dim = 8
        net = Net(dim=dim).to("cpu").eval()
        Wrap(net)

        def elsewhere():
            Wrap(net, 1)  # another scope: the module's binding is not read here
            inner = Net(dim=2)
            Wrap(inner, 2)
            for inner in []:
                Wrap(inner, 3)  # rebound by the loop

        net = build()
        Wrap(net, 4)
        other = Net(dim=3).cuda()
        with open("f") as other:
            Wrap(other, 5)

        def documented():
            """
            >>> layer = Net(
            ...     dim=4)
            >>> this example does not parse
            >>> Wrap(layer, 6)
            """
        ''')
    wraps = [(site.site, site.args) for name, site in calls_in_source(source, "a.py")
             if name == "Wrap"]
    assert wraps == [("a.py:3", ("Net(dim=8)",)), ("a.py:8", ("Net(dim=2)", "2")),
                     ("a.py:23", ("Net(dim=4)", "6"))]


def test_chains_of_bindings_stop_before_the_text_grows_without_bound() -> None:
    # Each call nests the one before (twice in the second chain): read whole, the text would
    # nest past what ast.unparse and the worker's evaluation recurse through, or double at
    # every line.
    deep = "a0 = Net(1)\n" + "".join(f"a{i} = Net(a{i - 1})\n" for i in range(1, 1500))
    wide = "b0 = Net(1)\n" + "".join(f"b{i} = Net(b{i - 1}, b{i - 1})\n" for i in range(1, 60))
    for source in (deep, wide):
        found = calls_in_source(source, "a.py")
        assert 0 < len(found) <= MAX_SUBSTITUTED_DEPTH
        assert max(len(site.args[0]) for _name, site in found) < 20 * MAX_SUBSTITUTED_NODES


def test_later_calls_are_chosen_by_the_variants_they_add() -> None:
    first = CallSite("README.md:1", kwargs=(("dim", "16"),))
    values_only = [CallSite(f"README.md:{line}", kwargs=(("dim", str(line)),))
                   for line in range(2, 2 + MAX_OTHER_CALL_SITES)]
    nested = CallSite("README.md:40", kwargs=(
        ("dim", "16"), ("attn_layers", "Decoder(dim=8, rel_pos_bias=True)")))
    flag = CallSite("README.md:41", kwargs=(("dim", "16"), ("alibi_pos_bias", "True")))
    nested_again = CallSite("README.md:42", kwargs=(
        ("dim", "16"), ("attn_layers", "Decoder(dim=4, rel_pos_bias=True)")))
    chosen = most_varied([first, *values_only, nested, flag, nested_again],
                         1 + MAX_OTHER_CALL_SITES)
    # Calls that turn something on first; then those that add one value each, in order: the
    # variant seen already adds no more than they do.
    assert chosen == (first, nested, flag, *values_only[:MAX_OTHER_CALL_SITES - 2])


NETS = """
    import torch
    from torch import nn


    class AlibiBias(nn.Module):
        def __init__(self, heads):
            super().__init__()
            self.slopes = nn.Parameter(torch.arange(heads, dtype=torch.float))

        def forward(self, x):
            return x + self.slopes.sum()


    class Net(nn.Module):
        def __init__(self, dim, heads, alibi_pos_bias=False):
            super().__init__()
            self.proj = nn.Linear(dim, dim)
            self.bias = AlibiBias(heads) if alibi_pos_bias else None

        def forward(self, x):
            x = self.proj(x)
            return x if self.bias is None else self.bias(x)
"""

WRAPPERS = """
    from torch import nn


    class Wrapper(nn.Module):
        def __init__(self, net, scale):
            super().__init__()
            self.net = net
            self.scale = scale

        def forward(self, x):
            return self.net(x) * self.scale
"""


def package_of_nets_and_wrappers(tmp_path: Path) -> Workspace:
    """``pkg.nets`` (NETS) and ``pkg.wrappers`` (WRAPPERS), both imported by the package."""
    workspace = Workspace(tmp_path)
    workspace.write("pkg/__init__.py",
                    "from pkg.nets import Net\nfrom pkg.wrappers import Wrapper\n")
    workspace.write("pkg/nets.py", textwrap.dedent(NETS))
    workspace.write("pkg/wrappers.py", textwrap.dedent(WRAPPERS))
    return workspace


@pytest.mark.slow
def test_a_wrapper_of_a_bound_model_and_a_late_variant_get_real_instances(
        tmp_path: Path) -> None:
    # Wrapper's module does not import Net: the README imports both from the package. Net's
    # only call that builds AlibiBias comes after more calls than a job carries that change
    # values only.
    workspace = package_of_nets_and_wrappers(tmp_path)
    variants = "".join(f"variant = Net(dim=16, heads={heads})\n"
                       for heads in range(2, 3 + MAX_OTHER_CALL_SITES))
    workspace.write("README.md", "```python\nfrom pkg import Net, Wrapper\n"
                    "net = Net(dim=16, heads=4).eval()\n"
                    "wrapped = Wrapper(net, scale=2.0)\n"
                    f"{variants}"
                    "with_alibi = Net(dim=16, heads=4, alibi_pos_bias=True)\n```\n")
    completed = fx_lsp("check", "--no-cache", "--format", "json", ".", cwd=workspace.root)
    data: dict[str, Any] = json.loads(completed.stdout)
    modules = {module["class"]: module for module in data["modules"]}
    assert modules["Wrapper"]["status"] == "traceable"
    assert modules["Wrapper"]["arguments"] == {
        "from": "call-site", "args": ["Net(dim=16, heads=4)"], "kwargs": {"scale": "2.0"},
        "site": "README.md:4"}
    assert modules["AlibiBias"]["arguments"]["from"] == "parent"
    assert modules["AlibiBias"]["arguments"]["site"] == f"README.md:{6 + MAX_OTHER_CALL_SITES}"
    outcomes = plain_verdicts(str(workspace.root), data["modules"])
    problems = [disagreement(module, plain, str(workspace.root))
                for module, plain in zip(data["modules"], outcomes, strict=True)]
    assert problems == [None] * len(data["modules"])


PARAMETRIZED_TEST = '''\
    import pytest
    param = pytest.mark.parametrize

    @param('depth', (4, 5))
    @pytest.mark.parametrize('rotary, alibi', [
        (True, False), pytest.param(False, True, id="alibi"),
        pytest.param(True, True, marks=pytest.mark.xfail)])
    def test_unet_skip(depth, rotary, alibi, tmp_path):
        model = TransformerWrapper(num_tokens=20000, attn_layers=Encoder(
            dim=128, depth=depth, rotary_pos_emb=rotary, alibi_pos_bias=alibi))
        Wrapper(model)
        Saved(path=tmp_path)  # a fixture: no value to read

    @pytest.mark.parametrize("dim", [8], indirect=True)
    def test_indirect(dim):
        Net(dim)  # the value goes to the fixture "dim", not to the parameter

    @pytest.mark.parametrize(["a", "b"], [(1, 2), (3, 4)])
    @pytest.mark.parametrize("c", range(3))  # not written out: not read
    def test_written(a, b, c):
        Pair(a, b, c)
        Pair(a, b)
'''


def test_a_parametrized_test_parameter_is_read_as_each_of_its_values() -> None:
    found = calls_in_source(textwrap.dedent(PARAMETRIZED_TEST), "test_x.py")
    encoders = [(site.site, dict(site.kwargs)) for name, site in found if name == "Encoder"]
    # Every value of each decorator is read before a combination repeats one; the xfail entry
    # is left out; the site stays the call's line.
    assert [(site, kwargs["depth"], kwargs["rotary_pos_emb"], kwargs["alibi_pos_bias"])
            for site, kwargs in encoders] == [
        ("test_x.py:9", "4", "True", "False"), ("test_x.py:9", "5", "False", "True"),
        ("test_x.py:9", "4", "False", "True"), ("test_x.py:9", "5", "True", "False")]
    wrapped = [site.args[0] for name, site in found if name == "Wrapper"]
    assert wrapped[1] == ("TransformerWrapper(num_tokens=20000, attn_layers=Encoder(dim=128, "
                          "depth=5, rotary_pos_emb=False, alibi_pos_bias=True))")
    assert len(wrapped) == 4
    assert [(name, site.args) for name, site in found
            if name in ("Saved", "Net", "Pair")] == [("Pair", ("1", "2")), ("Pair", ("3", "4"))]


def test_the_combinations_of_a_call_are_bounded() -> None:
    source = textwrap.dedent('''\
        @pytest.mark.parametrize("a", [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
        @pytest.mark.parametrize("b", [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
        @pytest.mark.parametrize("c", [0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
        def test_many(a, b, c):
            Net(a, b, c)
        ''')
    found = [site.args for _name, site in calls_in_source(source, "test_x.py")]
    assert len(found) == MAX_PARAMETER_COMBINATIONS
    assert found[:2] == [("0", "0", "0"), ("1", "1", "1")]


def test_markdown_blocks_and_notebook_cells_are_read_in_order_as_one_scope() -> None:
    readme = ("```python\nmodel_xl = TransformerWrapper(max_mem_len=2048)\n```\n"
              "Some text.\n```python\nthis block does not parse(\n```\n"
              "```python\nxl_wrapper = XLAutoregressiveWrapper(model_xl)\n```\n")
    assert [(name, site.site, site.args) for name, site in calls_in_markdown(
        readme, "README.md")] == [
        ("TransformerWrapper", "README.md:2", ()),
        ("XLAutoregressiveWrapper", "README.md:9", ("TransformerWrapper(max_mem_len=2048)",))]
    notebook = {"nbformat": 4, "nbformat_minor": 5,
                "metadata": {"kernelspec": {"language": "python"}}, "cells": [
                    {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                     "source": "import torch\nnet = Net(dim=2)\n"},
                    {"cell_type": "markdown", "metadata": {}, "source": "Wrap it:"},
                    {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                     "source": "x = 1\n\nWrap(net)\n"}]}
    assert [(name, site.site, site.args) for name, site in calls_in_notebook(
        json.dumps(notebook), "nb.ipynb")] == [
        ("Net", "nb.ipynb:cell 1:2", ()), ("Wrap", "nb.ipynb:cell 3:3", ("Net(dim=2)",))]


@pytest.mark.slow
def test_a_parametrized_variant_and_a_later_readme_block_get_real_instances(
        tmp_path: Path) -> None:
    # Net's only call that builds AlibiBias reads a parameter of a parametrized test; Wrapper's
    # only call reads a name bound in the README's block before.
    workspace = package_of_nets_and_wrappers(tmp_path)
    workspace.write("README.md", "```python\nfrom pkg import Net, Wrapper\n"
                    "net = Net(dim=16, heads=4)\n```\n\nWrap it:\n\n"
                    "```python\nwrapped = Wrapper(net, scale=2.0)\n```\n")
    workspace.write("tests/test_nets.py", textwrap.dedent('''\
        import pytest
        from pkg import Net

        @pytest.mark.parametrize("alibi", (False, True))
        def test_net(alibi, tmp_path):
            assert Net(dim=16, heads=2, alibi_pos_bias=alibi) is not None
        '''))
    completed = fx_lsp("check", "--no-cache", "--format", "json", ".", cwd=workspace.root)
    data: dict[str, Any] = json.loads(completed.stdout)
    modules = {module["class"]: module for module in data["modules"]}
    assert modules["Wrapper"]["status"] == "traceable"
    assert modules["Wrapper"]["arguments"] == {
        "from": "call-site", "args": ["Net(dim=16, heads=4)"], "kwargs": {"scale": "2.0"},
        "site": "README.md:9"}
    assert modules["AlibiBias"]["arguments"]["from"] == "parent"
    assert modules["AlibiBias"]["arguments"]["site"] == "tests/test_nets.py:6"
    outcomes = plain_verdicts(str(workspace.root), data["modules"])
    problems = [disagreement(module, plain, str(workspace.root))
                for module, plain in zip(data["modules"], outcomes, strict=True)]
    assert problems == [None] * len(data["modules"])
