"""A class held by a root built on guessed arguments falls back to its own instance when the
parent-built one fails it: an instance that does not fit, has no
inputs, or whose tracing ran out of time never replaces a verdict of the class's own, so what
a class gets does not depend on how far its parent got."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from fx_lsp.cli.output_formats.json_report import parse_report
from fxcore.model.results import Arguments, Failure, FileResult, ModuleResult
from fxcore.reporting.parent_arguments import apply_parent_arguments

from cli_support import fx_lsp
from engine_support import Workspace

BLOCKS = """
    from torch import nn


    class Residual(nn.Module):
        def __init__(self, in_dim: int, out_dim: int):
            super().__init__()
            self.lin = nn.Linear(in_dim, out_dim)

        def forward(self, x):
            return x + self.lin(x)
    """

PARENTS = """
    from torch import nn

    from pkg.blocks import Residual


    class Widening(nn.Module):
        # Built on a guessed ``dim``: the Residual it holds adds a 2*dim output to a dim input.
        def __init__(self, dim: int):
            super().__init__()
            self.block = Residual(dim, 2 * dim)

        def forward(self, x):
            return self.block(x)
    """

OWN = Arguments(origin="guessed", kwargs={"dim": "64"})
PATH = "/ws/pkg/blocks.py"


def verdict(status: str, arguments: Arguments | None, mode: str = "fx",
            failure: tuple[str, str] | None = None) -> ModuleResult:
    module = ModuleResult(path=PATH, class_name="Child", qualified_name="pkg.blocks:Child",
                          line=1, column=7, end_line=1, end_column=12, status=status,
                          arguments=arguments, mode=mode)
    if failure is not None:
        code, kind = failure
        module.failures = [Failure(code=code, kind=kind, message=kind, path=PATH, line=1,
                                   column=1, end_line=1, end_column=2)]
    return module


def from_guessed_parent(status: str, failure: tuple[str, str] | None = None,
                        mode: str = "fx") -> ModuleResult:
    return verdict(status, Arguments(origin="parent", kwargs={"dim": "64"},
                                     parent="pkg.parents:Parent", path="child",
                                     parent_origin="guessed"), mode, failure)


def shown(own: ModuleResult, derived: ModuleResult) -> ModuleResult:
    results = [FileResult(path=PATH, modules=[own]),
               FileResult(path="/ws/pkg/parents.py", derived_modules=[derived])]
    return apply_parent_arguments(results)[0].modules[0]


#: Parent-built verdicts that are no verdict on the class: each leaves the class its own.
FAILED_PARENT_INSTANCES = {
    "timed out": from_guessed_parent("failed", ("FX102", "timeout")),
    "crashed": from_guessed_parent("failed", ("FX102", "crash")),
    "does not fit (fx)": from_guessed_parent("not-traced", ("FX105", "does-not-fit")),
    "does not fit (export)": from_guessed_parent("not-traced", ("FX406", "does-not-fit"),
                                                 "export"),
    "no inputs": from_guessed_parent("not-traced"),
    "shapes do not fit": dataclasses.replace(from_guessed_parent("traceable"),
                                             shape_errors=["add fails"]),
}
#: Verdicts of the class's own guessed instance, good or not.
OWN_VERDICTS = {
    "traceable": verdict("traceable", OWN),
    "failed": verdict("failed", OWN, failure=("FX001", "dynamic-control-flow")),
    "no inputs": verdict("not-traced", OWN),
    "does not fit": verdict("not-traced", OWN, failure=("FX105", "does-not-fit")),
}


@pytest.mark.parametrize("own_name", OWN_VERDICTS)
@pytest.mark.parametrize("parent_name", FAILED_PARENT_INSTANCES)
def test_a_failed_parent_instance_leaves_the_class_its_own(parent_name: str,
                                                           own_name: str) -> None:
    own = dataclasses.replace(OWN_VERDICTS[own_name],
                              mode=FAILED_PARENT_INSTANCES[parent_name].mode)
    assert shown(own, FAILED_PARENT_INSTANCES[parent_name]) is own
    # Whether the parent's verdict came in or not (the parent's time ran out before it got
    # to the child), the class shows the same verdict.
    assert apply_parent_arguments([FileResult(path=PATH, modules=[own])])[0].modules[0] is own


def test_a_parent_instance_that_fits_still_serves_the_class() -> None:
    fitting = from_guessed_parent("traceable")
    assert shown(verdict("not-traced", OWN, failure=("FX105", "does-not-fit")),
                 fitting).arguments == fitting.arguments
    assert shown(verdict("traceable", OWN), fitting).arguments == fitting.arguments
    # A class with no instance of its own (its arguments could not be guessed) takes what
    # its parent's instance got, time-out included: there is nothing of its own to keep.
    hung = FAILED_PARENT_INSTANCES["timed out"]
    assert shown(verdict("not-traced", None), hung).arguments == hung.arguments


def test_the_fitting_parent_instance_is_chosen_over_one_that_does_not_fit() -> None:
    fitting = dataclasses.replace(from_guessed_parent("traceable"),
                                  arguments=dataclasses.replace(
                                      from_guessed_parent("traceable").arguments,
                                      parent="pkg.z:Z"))
    results = [FileResult(path=PATH, modules=[verdict("traceable", OWN)]),
               FileResult(path="/ws/pkg/a.py",
                          derived_modules=[FAILED_PARENT_INSTANCES["shapes do not fit"]]),
               FileResult(path="/ws/pkg/z.py", derived_modules=[fitting])]
    assert apply_parent_arguments(results)[0].modules[0].arguments.parent == "pkg.z:Z"


def test_a_child_of_a_guessed_parent_keeps_the_verdict_of_its_own_fitting_instance(
        tmp_path: Path) -> None:
    workspace = Workspace(tmp_path)
    workspace.write("pkg/__init__.py", "")
    workspace.write("pkg/blocks.py", BLOCKS)
    workspace.write("pkg/parents.py", PARENTS)
    completed = fx_lsp("check", "--no-cache", "--format", "json", ".", cwd=tmp_path)
    (residual,) = [module for module in parse_report(completed.stdout)["modules"]
                   if module["class"] == "Residual"]
    # Widening(dim=64).block = Residual(64, 128) traces, but its shapes do not fit its input
    # (FX300; export and compile call it "does not fit", FX406/FX504, and keep the class's
    # own instance already); the class's own guess, in_dim == out_dim, fits.
    assert residual["arguments"]["from"] == "guessed"
    assert residual["status"] == "traceable"
    assert not residual["shape_errors"]
