"""The fixes of graph breaks at calls dynamo skips (``skipped_call_fixes``), planned from a
break as fx-lsp reports it (at its statement) and applied: each edit's text, that it is made
once, and, by real torch, that the fixed code compiles whole with the same output, eager and
compiled (``compiled_proof``: aot_eager, and inductor where it builds). The corpus
(``test_fix_all_corpus``) proves them through ``fx-lsp check --fix`` on every spelling."""

from __future__ import annotations

import importlib.util
import sys
import zlib
from pathlib import Path

import pytest
from compiled_proof import assert_outputs_kept

from fxcore.fixing import pt2_plan
from fxcore.fixing.fix import run_here
from fxcore.fixing.skipped_call_sites import dynamo_decorators
from fxcore.model.results import Failure

SOURCE = '''import copy
import zlib

import numpy as np
import torch
from torch import nn


def salted(x):
    salt = zlib.crc32(b"fx") % 5
    return x + salt


class Net(nn.Module):
    def forward(self, x):
        gate = torch.from_numpy(np.interp(x.numpy(), [-1.0, 1.0], [0.0, 2.0]))
        kept = copy.deepcopy(x * 2)
        return salted(gate) + kept
'''


def failure(path: str, line: int, column: int, code: str) -> Failure:
    end = SOURCE.splitlines()[line - 1]
    return Failure(path, line, column, line, len(end) + 1, code=code,
                   kind=f"graph-break-{code.lower()}", message="")


def fixed(path: Path, *breaks: tuple[int, int, str]) -> tuple[str, list[str]]:
    """The text after the first fix of each break (one at a time), and their titles."""
    text, titles = SOURCE, []
    for line, column, code in sorted(breaks, reverse=True):
        current = text
        fixes = pt2_plan.fixes_of(failure(str(path), line, column, code), None,
                                  lambda _, at=current: at, lambda _: str(path.parent), run_here)
        assert fixes, code
        _, text = fixes[0].texts(lambda _, at=current: at)
        titles.append(fixes[0].title)
        _, again = fixes[0].texts(lambda _, at=text: at)
        assert again == text  # made once
    return text, titles


@pytest.mark.slow
@pytest.mark.matrix
@pytest.mark.timeout(900)  # inductor builds the code before and after the fixes
def test_each_break_gets_its_fix_and_compiles_whole(tmp_path: Path) -> None:
    numpy = pytest.importorskip("numpy")
    import torch

    path = tmp_path / "net.py"
    text, titles = fixed(path, (16, 9, "GB0294"), (17, 9, "GB4198"), (10, 5, "GB0007"))
    assert titles == [
        "Replace copy.deepcopy(x * 2) with (x * 2).detach().clone() (the same values; no "
        "longer a leaf that requires grad: unsafe)",
        "Run np.interp() as a custom op (torch.library.custom_op, its fake the "
        "input's shape; outputs kept: safe)",
        "Trace salted() non-strictly (@torch._dynamo.nonstrict_trace; its Python runs when "
        "traced, not per call: unsafe)"]
    assert "        gate = _interp_op_" in text and "(x)\n" in text
    assert "        kept = (x * 2).detach().clone()\n" in text
    assert "@torch._dynamo.nonstrict_trace\ndef salted(x):" in text
    assert "return torch.empty_like(tensor, dtype=torch.float64)\n" in text

    path.write_text(text)
    spec = importlib.util.spec_from_file_location("fixed_net", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["fixed_net"] = module
    spec.loader.exec_module(module)
    graphs = []

    def backend(graph_module, _inputs):
        graphs.append(graph_module)
        return graph_module.forward

    x = torch.randn(4, 8)
    torch._dynamo.reset()
    with torch.no_grad():
        compiled = torch.compile(module.Net(), backend=backend, fullgraph=True)(x)
    torch._dynamo.reset()
    assert len(graphs) == 1
    gate = torch.from_numpy(numpy.interp(x.numpy(), [-1.0, 1.0], [0.0, 2.0]))
    assert torch.equal(compiled, gate + zlib.crc32(b"fx") % 5 + x * 2)
    original: dict = {}
    exec(compile(SOURCE, str(tmp_path / "original.py"), "exec"), original)
    assert_outputs_kept(original["Net"], module.Net, [(x,)])


def test_no_fix_where_the_output_shape_is_not_clear(tmp_path: Path) -> None:
    """A C-extension call that is not element-wise (zlib.crc32 in forward) gets no custom op;
    outside a module-level helper, no decorator either."""
    source = '''import zlib

import torch
from torch import nn


class Net(nn.Module):
    def forward(self, x):
        return x + zlib.crc32(b"fx")
'''
    path = str(tmp_path / "net.py")
    found = pt2_plan.fixes_of(
        Failure(path, 9, 9, 9, 38, code="GB0007", kind="graph-break-gb0007", message=""),
        None, lambda _: source, lambda _: str(tmp_path), run_here)
    assert found == []


@pytest.mark.matrix
def test_dynamo_decorators_are_those_of_the_installed_torch() -> None:
    import torch._dynamo.decorators

    expected = {name for name in ("nonstrict_trace", "leaf_function")
                if hasattr(torch._dynamo.decorators, name)}
    assert dynamo_decorators() == expected


@pytest.mark.parametrize("available", [frozenset(), frozenset({"nonstrict_trace"})])
def test_disable_is_the_last_resort(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    available: frozenset[str]) -> None:
    from fxcore.fixing import skipped_call_fixes

    monkeypatch.setattr(skipped_call_fixes, "dynamo_decorators", lambda: available)
    path = tmp_path / "net.py"
    fixes = pt2_plan.fixes_of(failure(str(path), 10, 5, "GB0007"), None, lambda _: SOURCE,
                              lambda _: str(tmp_path), run_here)
    assert [fix.title.split(" (")[0] for fix in fixes] == [
        *(["Trace salted() non-strictly"] if available else []),
        "Leave salted() uncompiled"]
    assert all(not fix.safe for fix in fixes)
    assert not fixes[-1].preferred
