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
from pathlib import Path

import pytest
from fix_all_outputs import assert_breaks_gone_outputs_kept, fixed_and_measured

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


def _module_level_options(path: Path) -> list[str]:
    """The ``torch._dynamo.config`` options the file sets at its top."""
    return [ast.unparse(target) for node in ast.parse(path.read_text()).body
            if isinstance(node, ast.Assign) for target in node.targets
            if "config" in ast.unparse(target)]


@pytest.mark.slow
@pytest.mark.matrix
@pytest.mark.timeout(1800)  # five classes compiled twice per backend, and a check with --fix
def test_fix_all_scopes_options_to_each_class_outputs_kept(tmp_path: Path) -> None:
    run = fixed_and_measured(CORPUS, tmp_path)
    assert "compiled calls only" in run.log, run.log
    assert _module_level_options(run.path) == [], run.path.read_text()
    for name in run.inputs:
        assert_breaks_gone_outputs_kept(run, name)
        assert run.after[name]["graphs"] == 1, run.after[name]
        # Set while the class compiled, as torch left it for every other model once it returned.
        assert not any(run.after[name]["options"].values()), run.after[name]
