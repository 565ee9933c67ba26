"""FX105: an error on an instance fx-lsp built from defaults or guesses that involves no traced
value is "the instance does not fit" (a hint, counted apart from failures), and the next
instance is traced before giving up; an error that involves a traced value is still a failure
of tracing. Checked through the real CLI, and against plain torch.fx on the instances rebuilt
from the JSON ``arguments``; the decision itself on plain torch.fx's own exceptions."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from torch import fx, nn

from fx_lsp.cli.output_formats.json_report import parse_report
from fxcore.model.results import Arguments, Failure, FileResult, ModuleResult
from fxcore.reporting.parent_arguments import apply_parent_arguments
from fxcore.worker.capture.fx.instance_fit import involves_traced_value

from cli_support import fx_lsp
from engine_support import REPO_ROOT, Workspace, line_of

sys.path.insert(0, str(REPO_ROOT))
from benchmarks.fidelity.plain_fx_check import disagreement, plain_verdicts

BLOCKS = """
    import numpy as np
    import torch
    from torch import nn


    class ActBlock(nn.Module):
        def __init__(self, dim=8, act=None):
            super().__init__()
            self.proj = nn.Linear(dim, dim)
            # Made here, not kept as given: a parameter forward calls is never left None.
            self.act = act() if act is not None else None

        def forward(self, x):
            return self.act(self.proj(x))  # act is None


    class Branches(nn.Module):
        def __init__(self, dim=8, branches=()):
            super().__init__()
            self.branches = nn.ModuleList(nn.Linear(dim, dim) for _ in branches)

        def forward(self, x):
            return torch.cat([branch(x) for branch in self.branches], dim=-1)  # empty


    class Stack(nn.Module):
        def __init__(self, dim=8, n_blocks=0):
            super().__init__()
            self.blocks = nn.ModuleList(nn.Linear(dim, dim) for _ in range(n_blocks))

        def forward(self, x):
            return torch.cat([block(x) for block in self.blocks], dim=-1)


    class Zoo(nn.Module):
        def __init__(self, dim=8, n_blocks=0):
            super().__init__()
            self.blocks = nn.ModuleList(nn.Linear(dim, dim) for _ in range(n_blocks))

        def forward(self, x):
            return torch.cat([block(x) for block in self.blocks], dim=-1)


    def zoo_small():
        return Zoo(n_blocks=3)


    class Projected(nn.Module):
        def __init__(self, dim=8, project=False):
            super().__init__()
            if project:
                self.proj = nn.Linear(dim, dim)

        def forward(self, x):
            return x @ self.proj.weight  # never set


    class Needy(nn.Module):
        def __init__(self, dim, act=None):
            super().__init__()
            self.proj = nn.Linear(dim, dim)
            self.act = act() if act is not None else None

        def forward(self, x):
            return self.act(self.proj(x))  # guessed dim, act None


    class Branchy(nn.Module):
        def __init__(self, dim=8, n_blocks=0):
            super().__init__()
            self.blocks = nn.ModuleList(nn.Linear(dim, dim) for _ in range(n_blocks))

        def forward(self, x):
            if x.sum() > 0:
                return x
            return x


    class BranchThenNone(nn.Module):
        def __init__(self, dim=8, act=None):
            super().__init__()
            self.proj = nn.Linear(dim, dim)
            self.act = act() if act is not None else None

        def forward(self, x):
            if x.sum() > 0:  # branch first
                x = self.proj(x)
            return self.act(x)  # None after the branch


    class ScaledThenMissing(nn.Module):
        def __init__(self, dim=8, context_dim=None):
            super().__init__()
            self.scale = nn.Parameter(torch.ones(dim))
            if context_dim is not None:
                self.context = nn.Linear(context_dim, dim)

        def forward(self, x, context=None):
            x = x * self.scale
            if x.sum() > 0:  # scaled first
                x = -x
            if context is not None:
                x = x + self.context(context)  # no context layer
            return x


    class Concurrent(nn.Sequential):
        def __init__(self, axis=1):
            super().__init__()
            self.axis = axis

        def forward(self, x):
            return torch.cat([m(x) for m in self._modules.values()], dim=self.axis)  # filled


    class Fork(nn.Module):
        def __init__(self, dim=8):
            super().__init__()
            self.branches = Concurrent(axis=-1)
            for index in range(2):
                self.branches.add_module(f"branch{index}", nn.Linear(dim, dim))

        def forward(self, x):
            return self.branches(x)


    class NumpyAbs(nn.Module):
        def forward(self, x):
            return torch.softmax(-np.abs(x), dim=-1)


    class NegatedUfunc(nn.Module):
        def forward(self, x):
            return x.masked_fill(x > 0, -np.abs)  # the ufunc negated


    class ReadsAConstant(nn.Module):
        def __init__(self, dim=8):
            super().__init__()
            self.proj = nn.Linear(dim, dim)
            self.register_buffer("scale", torch.arange(8.0))  # a constant: not traced

        def forward(self, x):
            if self.scale.sum() > 0:  # the constant's value
                x = x * 2
            return self.proj(x)


    class Configured(nn.Module):
        def __init__(self, dim=8, act=None):
            super().__init__()
            self.proj = nn.Linear(dim, dim)
            self.act = act

        def forward(self, x):
            return self.act(self.proj(x))  # configured
"""

PYPROJECT = """
    [project]
    name = "ws"
    version = "0"

    [tool.fx-lsp.modules."blocks:Configured"]
    kwargs = { dim = 4 }
"""


def check(root: Path, output_format: str) -> subprocess.CompletedProcess[str]:
    completed = fx_lsp("check", "--no-cache", "--format", output_format, ".", cwd=root)
    # Branchy, BranchThenNone, ScaledThenMissing, NumpyAbs, NegatedUfunc, Configured fail
    assert completed.returncode == 1, completed.stderr
    return completed


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    workspace = Workspace(tmp_path_factory.mktemp("fit"))
    workspace.write("pyproject.toml", PYPROJECT)
    workspace.write("blocks.py", BLOCKS)
    return workspace.root, parse_report(check(workspace.root, "json").stdout)


def by_class(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {module["class"]: module for module in report["modules"]}


def codes_and_lines(module: dict[str, Any]) -> list[tuple[str, int]]:
    return [(failure["code"], failure["line"]) for failure in module["failures"]]


@pytest.mark.parametrize(("name", "marker", "error"), [
    ("ActBlock", "# act is None", "TypeError: 'NoneType' object is not callable"),
    ("Branches", "# empty", "ValueError: torch.cat(): expected a non-empty list of Tensors"),
    ("Projected", "# never set", "AttributeError: 'Projected' object has no attribute 'proj'"),
])
def test_an_error_of_a_defaults_instance_without_a_traced_value_does_not_fit(
        checked, name: str, marker: str, error: str) -> None:
    root, report = checked
    module = by_class(report)[name]
    assert (module["status"], module["arguments"]["from"]) == ("not-traced", "defaults")
    assert codes_and_lines(module) == [("FX105", line_of(root / "blocks.py", marker))]
    message = module["failures"][0]["message"]
    assert message.startswith(f"The instance does not fit: {name}() (built with its defaults) "
                              f"raised {error}")
    assert f'[tool.fx-lsp.modules."blocks:{name}"]' in message
    (diagnostic,) = [d for d in report["diagnostics"] if d["classes"] == [name]]
    assert (diagnostic["code"], diagnostic["severity"]) == ("FX105", "hint")


def test_the_next_instance_is_a_guess_for_a_default_that_builds_nothing(checked) -> None:
    """Stack() makes an empty ModuleList; the guess n_blocks=2 makes one that fits."""
    module = by_class(checked[1])["Stack"]
    assert (module["status"], module["failures"]) == ("traceable", [])
    assert module["arguments"] == {"from": "guessed", "args": [], "kwargs": {"n_blocks": "2"}}
    assert module["capture_notes"] == [
        "The instance Stack() (built with its defaults) does not fit it: ValueError: "
        "torch.cat(): expected a non-empty list of Tensors, an error that involves no traced "
        "value. This verdict is on the next instance fx-lsp could build, Stack(n_blocks=2)."]


def test_a_builder_comes_before_the_guesses(checked) -> None:
    module = by_class(checked[1])["Zoo"]
    assert (module["status"], module["arguments"]) == (
        "traceable", {"from": "builder", "builder": "blocks:zoo_small", "args": [],
                      "kwargs": {}})


def test_guessed_instances_that_do_not_fit_are_named_and_bounded(checked) -> None:
    """Needy's dim is guessed and its act=None fits no guess: three instances at most, the
    last one's FX105 naming the two before it."""
    root, report = checked
    module = by_class(report)["Needy"]
    assert (module["status"], module["arguments"]["from"]) == ("not-traced", "guessed")
    assert codes_and_lines(module) == [("FX105", line_of(root / "blocks.py", "# guessed dim"))]
    message = module["failures"][0]["message"]
    assert message.startswith("The instance does not fit: Needy(dim=256) (built with guessed "
                              "arguments) raised TypeError: 'NoneType' object is not callable")
    tried = message.partition("Instances tried before, which did not fit either: ")[2]
    assert tried.count("The instance Needy(") == 2, message
    assert "Needy(dim=64)" in tried and "Needy(dim=128)" in tried


def test_errors_that_involve_a_traced_value_are_still_failures_of_tracing(checked) -> None:
    root, report = checked
    modules = by_class(report)
    assert codes_and_lines(modules["Branchy"]) == [
        ("FX001", line_of(root / "blocks.py", "if x.sum() > 0"))]
    # -np.abs on a traced value: numpy's own error names no Proxy, its operand is one.
    assert codes_and_lines(modules["NumpyAbs"]) == [
        ("FX199", line_of(root / "blocks.py", "np.abs(x)"))]
    assert (modules["Branchy"]["status"], modules["NumpyAbs"]["status"]) == ("failed", "failed")
    # -np.abs (the ufunc itself, a library bug) on globals alone raises for any instance.
    assert codes_and_lines(modules["NegatedUfunc"]) == [
        ("FX199", line_of(root / "blocks.py", "# the ufunc negated"))]


def test_an_error_of_the_instance_after_a_recovered_failure_is_a_hint(checked) -> None:
    """The real FX001 decides the verdict; the defaults' act=None, called after the tracer
    recovered from it, is the instance's (FX105, a hint) and never an FX199."""
    root, report = checked
    module = by_class(report)["BranchThenNone"]
    assert module["status"] == "failed"
    assert codes_and_lines(module) == [
        ("FX001", line_of(root / "blocks.py", "# branch first")),
        ("FX105", line_of(root / "blocks.py", "# None after the branch"))]
    message = module["failures"][1]["message"]
    assert message.startswith(
        "(May be a consequence of recovering from the failure at line "
        f"{line_of(root / 'blocks.py', '# branch first')}.) The instance does not fit: "
        "BranchThenNone() (built with its defaults) raised TypeError: 'NoneType' object is "
        "not callable"), message
    severities = {d["code"]: d["severity"] for d in report["diagnostics"]
                  if d["classes"] == ["BranchThenNone"]}
    assert severities == {"FX001": "error", "FX105": "hint"}


def test_torch_fx_s_cache_of_traced_parameters_is_no_operand_of_the_error(checked) -> None:
    """self.scale, read through torch.fx's __getattr__ wrapper, leaves a traced value in that
    wrapper's cache; the later self.context is missing on the defaults' instance all the
    same (pytorch-forecasting's GatedResidualNetwork without context_size)."""
    root, report = checked
    assert codes_and_lines(by_class(report)["ScaledThenMissing"]) == [
        ("FX001", line_of(root / "blocks.py", "# scaled first")),
        ("FX105", line_of(root / "blocks.py", "# no context layer"))]


def test_a_container_its_parent_fills_is_traced_as_the_parent_filled_it(checked) -> None:
    """Concurrent() is empty (FX105 on its defaults), and so is the instance its call site in
    Fork builds before add_module fills it: the verdict is on the instance Fork filled."""
    module = by_class(checked[1])["Concurrent"]
    assert (module["status"], module["failures"]) == ("traceable", [])
    assert module["arguments"] == {"from": "parent", "args": [], "kwargs": {},
                                   "parent": "blocks:Fork", "path": "branches",
                                   "parent_from": "defaults"}


def test_a_configured_instance_is_the_code_s_own_and_its_error_a_failure(checked) -> None:
    root, report = checked
    module = by_class(report)["Configured"]
    assert module["status"] == "failed"
    assert codes_and_lines(module) == [("FX199", line_of(root / "blocks.py", "# configured"))]


def test_a_constant_s_value_is_read_as_real_torch_fx_reads_it(checked) -> None:
    """A buffer is a constant under torch.fx (no proxy), its value read by Python
    (real torch.fx folds the branch): on meta that value is stood in and said, where torch
    would end the trace with "Tensor.item() cannot be called on meta tensors" (an FX105)."""
    root, report = checked
    module = by_class(report)["ReadsAConstant"]
    assert (module["status"], module["failures"], module["hints"]) == ("traceable", [], [])
    line = line_of(root / "blocks.py", "# the constant's value")
    assert any(f"blocks.py:{line} were taken as one" in note
               for note in module["capture_notes"]), module["capture_notes"]


def test_the_summary_counts_instances_that_do_not_fit_apart(checked) -> None:
    root, report = checked
    summary = report["summary"]
    # ActBlock, Branches, Projected, Needy; Stack, Zoo and Concurrent found an instance that
    # fits.
    assert (summary["instance_does_not_fit"], summary["not_traced"]) == (4, 0)
    assert (summary["traced"], summary["traceable"], summary["failed"]) == (11, 5, 6)
    assert summary["modes"]["fx"]["instance_does_not_fit"] == 4
    concise = check(root, "concise").stdout
    assert concise.splitlines()[-1].startswith(
        "Checked 1 file: 11 modules traced, 5 traceable, 6 failed, 4 that fx-lsp's instance or "
        "inputs do not fit, 0 not traced; 1 on guessed arguments")
    # Each says so once, on its line: no "was not traced" note repeats it.
    assert "was not traced" not in concise


@pytest.mark.slow
def test_every_verdict_agrees_with_plain_fx_on_the_instance_rebuilt_from_its_arguments(
        checked) -> None:
    """Plain torch.fx fails on the FX105's line for an instance that does not fit, and agrees
    with the verdict on the next instance for one that fits."""
    root, report = checked
    outcomes = plain_verdicts(str(root), report["modules"])
    plain = {module["class"]: outcome for module, outcome in zip(report["modules"], outcomes,
                                                                 strict=True)}
    assert plain["ActBlock"]["status"] == plain["Needy"]["status"] == "failed"
    assert plain["Stack"]["status"] == plain["Zoo"]["status"] == "traceable"
    problems = {module["class"]: disagreement(module, outcome, str(root))
                for module, outcome in zip(report["modules"], outcomes, strict=True)}
    assert problems == dict.fromkeys(problems)


# -- the decision, on plain torch.fx's own exceptions ------------------------------------------


class CallsNone(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.act = None

    def forward(self, x):
        return self.act(x)


class EmptyCat(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList()

    def forward(self, x):
        return torch.cat([block(x) for block in self.blocks], dim=1)


class AttributeOfNone(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = None

    def forward(self, x):
        return x @ self.proj.weight


class UnsetSubmodule(nn.Module):
    def forward(self, x):
        return self.proj(x)


def check_mask(size):
    if size is None:
        raise ValueError("no size")
    return torch.ones(size)


def check_input(x, width):
    raise ValueError(f"width {width} is not supported")


class RaisesOnConfig(nn.Module):
    def forward(self, x):
        return x * check_mask(None)


class HelperGivenTracedValue(nn.Module):
    def forward(self, x):
        return check_input(x, 4)


class NumpyOnTracedValue(nn.Module):
    def forward(self, x):
        return torch.softmax(-np.abs(x), dim=-1)


class NotASubmodule(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = [nn.Linear(4, 4)]

    def forward(self, x):
        return self.layers[0](x)


class TracedIndex(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4)])

    def forward(self, x):
        return self.layers[x.shape[0]](x)


class TorchGivenTracedValue(nn.Module):
    def forward(self, x):
        return torch.ones(x.size(0), 3, 4, 5, "x")  # torch's argument parser rejects it


class TracedKey(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.table = {1: 2}

    def forward(self, x):
        return self.table[x]


@pytest.mark.parametrize(("cls", "involved"), [
    (CallsNone, False), (EmptyCat, False), (AttributeOfNone, False), (UnsetSubmodule, False),
    (RaisesOnConfig, False),
    (HelperGivenTracedValue, True), (NumpyOnTracedValue, True), (NotASubmodule, True),
    (TracedIndex, True), (TracedKey, True), (TorchGivenTracedValue, True),
], ids=lambda value: getattr(value, "__name__", str(value)))
def test_whether_a_traced_value_is_involved(cls: type[nn.Module], involved: bool) -> None:
    with pytest.raises(Exception) as raised:
        fx.symbolic_trace(cls())
    tree = ast.parse(Path(__file__).read_text(encoding="utf-8"))
    assert involves_traced_value(raised.value, lambda path: path == __file__,
                                 lambda path: tree if path == __file__ else None) is involved


# -- a parent's instance that does not fit ------------------------------------------------------


def verdict(status: str, arguments: Arguments, *codes: str) -> ModuleResult:
    failures = [Failure(path="/ws/blocks.py", line=9, column=1, end_line=9, end_column=2,
                        code=code, kind={"FX105": "does-not-fit"}.get(code, "error"),
                        message="") for code in codes]
    return ModuleResult(path="/ws/blocks.py", line=3, column=7, end_line=3, end_column=12,
                        class_name="Block", qualified_name="blocks:Block", status=status,
                        arguments=arguments, failures=failures)


def test_a_parent_s_instance_that_does_not_fit_replaces_only_a_class_without_instance() -> None:
    """A class traced with its own guessed arguments keeps that verdict over a parent-built
    instance that does not fit; one that had no instance takes it (it says why)."""
    derived = verdict("not-traced", Arguments(origin="parent", parent="net:Net", path="block",
                                              parent_origin="defaults"), "FX105")
    guessed = verdict("traceable", Arguments(origin="guessed", kwargs={"dim": "64"}))
    needs_arguments = ModuleResult(path="/ws/blocks.py", line=3, column=7, end_line=3,
                                   end_column=12, class_name="Block",
                                   qualified_name="blocks:Block", status="not-traced",
                                   reason="The constructor needs arguments: dim.")
    fitting = verdict("traceable", Arguments(origin="parent", parent="net:Net", path="block",
                                             parent_origin="builder"))
    own_does_not_fit = verdict("not-traced", Arguments(origin="defaults"), "FX105")
    for own, parents, expected in ((own_does_not_fit, [derived], own_does_not_fit),
                                   (own_does_not_fit, [fitting], fitting)):
        (merged,) = apply_parent_arguments([FileResult(path="/ws/blocks.py", modules=[own],
                                                       derived_modules=parents)])
        assert merged.modules[0].arguments == expected.arguments
    for own, expected in ((guessed, guessed), (needs_arguments, derived)):
        (merged,) = apply_parent_arguments([FileResult(path="/ws/blocks.py", modules=[own],
                                                       derived_modules=[derived])])
        assert merged.modules[0].status == expected.status
        assert merged.modules[0].arguments == expected.arguments
