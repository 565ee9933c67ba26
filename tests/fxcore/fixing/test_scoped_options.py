"""A config option a graph break's fix needs (``capture_scalar_outputs``,
``capture_dynamic_output_shape_ops``) is set for the class's compiled calls only
(``scoped_options``: two decorators on its ``forward``), preferred; the process-wide flip at
the top of the file is the last resort, and its title says it affects every model in the
process. Proven with real torch on the CPU (``aot_eager``) over ``option_corpus``, through
``fx-lsp check --mode compile --fix --unsafe-fixes``: the breaks are gone, the outputs (eager
and compiled) are the same before and after, the file sets nothing at its top, and the options
are as torch's defaults once each compiled call has returned."""

from __future__ import annotations

import ast
import importlib.util
import shutil
from pathlib import Path

import pytest

from fxcore.fixing import scoped_options, value_plan
from fxcore.fixing.fix import run_here
from fxcore.model.results import Failure, ModuleResult
from fxcore.rules.compile import graph_break_kind

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "option_corpus" / "option_spellings.py"
SCALARS = "torch._dynamo.config.capture_scalar_outputs"
SHAPES = "torch._dynamo.config.capture_dynamic_output_shape_ops"

SOURCE = """\
import torch
from torch import nn


class Reads(nn.Module):
    # the threshold is the mean
    def forward(self, x):
        return torch.clamp(x, min=x.mean().item())


class Inherits(Reads):
    pass
"""


def _fix_all_corpus():  # its workspace and measuring helpers, shared
    spec = importlib.util.spec_from_file_location("fix_all_corpus",
                                                  HERE / "test_fix_all_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _failure(code: str, line: int = 8) -> Failure:
    return Failure(code=code, kind=graph_break_kind(code), message="", path="/w/m.py",
                   line=line, column=29, end_line=line, end_column=45)


def _module(class_name: str) -> ModuleResult:
    return ModuleResult(path="/w/m.py", line=5, column=7, end_line=5, end_column=12,
                        class_name=class_name, qualified_name=f"m:{class_name}",
                        status="failed")


@pytest.mark.parametrize(("code", "option"), [("GB0124", SCALARS), ("GB0033", SCALARS),
                                              ("GB0036", SHAPES)])
def test_the_option_is_scoped_to_the_class_and_the_process_wide_flip_says_so(
        code: str, option: str) -> None:
    assert scoped_options.why_not_scoped(option) is None  # every supported torch has it
    scoped, process = value_plan.fixes_of(_failure(code), _module("Reads"), SOURCE,
                                          {"/w/m.py": SOURCE}.get, run_here)
    assert scoped.preferred and not process.preferred
    assert not scoped.safe and not process.safe  # torch.export refuses the scoped one
    assert "Reads's compiled calls only" in scoped.title
    assert "affects every model in the process" in process.title
    name = option.rsplit(".", 1)[1]
    fixed = scoped.transform(SOURCE)
    assert fixed == SOURCE.replace(
        "    def forward", "    @torch.compiler.disable(recursive=False)\n"
        f"    @torch._dynamo.config.patch({name}=True)\n    def forward")
    assert scoped.transform(fixed) == fixed
    # Both options on one class: one patch, both keywords.
    other = SCALARS if option == SHAPES else SHAPES
    both = scoped_options.scope_config_option(fixed, "Reads", other)
    assert both.count("@torch.compiler.disable") == 1
    assert f"patch({name}=True, {other.rsplit('.', 1)[1]}=True)" in both
    assert f"{option} = True" in process.transform(SOURCE)


def test_a_class_without_its_own_forward_gets_the_process_wide_flip_only() -> None:
    [process] = value_plan.fixes_of(_failure("GB0124"), _module("Inherits"), SOURCE,
                                    {"/w/m.py": SOURCE}.get, run_here)
    assert process.preferred and "every model in the process" in process.title


def _module_level_options(path: Path) -> list[str]:
    """The ``torch._dynamo.config`` options the file sets at its top."""
    return [ast.unparse(target) for node in ast.parse(path.read_text()).body
            if isinstance(node, ast.Assign) for target in node.targets
            if "config" in ast.unparse(target)]


@pytest.mark.slow
@pytest.mark.timeout(900)  # five classes compiled twice by real torch, and a check with --fix
def test_fix_all_scopes_options_to_each_class_outputs_kept(tmp_path: Path) -> None:
    import torch

    corpus = _fix_all_corpus()
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    path = workspace / CORPUS.name
    shutil.copy(CORPUS, path)
    inputs = corpus.class_inputs(path)
    corpus.write_pyproject(workspace, {path.stem: inputs})
    before = corpus.measured(path, tmp_path / "before.pt", "aot_eager")
    log = corpus.fix_all(workspace)
    assert "compiled calls only" in log, log
    assert _module_level_options(path) == [], path.read_text()
    after = corpus.measured(path, tmp_path / "after.pt", "aot_eager")
    was, now = (torch.load(tmp_path / f"{when}.pt", weights_only=False)
                for when in ("before", "after"))
    for name in inputs:
        assert before[name]["breaks"], f"{name} meets no break unfixed"
        assert after[name]["breaks"] == [] and after[name]["error"] is None, after[name]
        assert after[name]["graphs"] == 1, after[name]
        # Set while the class compiled, as torch left it for every other model once it returned.
        assert not any(after[name]["options"].values()), after[name]
        assert corpus.same(was[name]["eager"], now[name]["eager"]), name
        assert corpus.same(was[name]["eager"], was[name]["compiled"]), name
        assert corpus.same(was[name]["compiled"], now[name]["compiled"]), name
