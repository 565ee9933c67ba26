"""A number read with ``.item()`` that only feeds ``math`` functions is kept a 0-d tensor and
the functions made torch's (``math_fixes``), offered instead of ``capture_scalar_outputs``,
which would move the break into ``math``; where the number reaches ``math`` and more, no fix
is offered. Proven with real torch on the CPU (``aot_eager``) over ``math_corpus`` through
``fx-lsp check --mode compile --fix --unsafe-fixes``: the breaks are gone, the outputs (eager
and compiled) the same before and after up to float rounding, the file sets no option."""

from __future__ import annotations

from pathlib import Path

import pytest
from fix_all_outputs import assert_breaks_gone_outputs_kept, fixed_and_measured

from fxcore.fixing import math_fixes, value_plan
from fxcore.fixing.fix import run_here
from fxcore.model.results import Failure, ModuleResult
from fxcore.rules.compile import graph_break_kind

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "math_corpus" / "math_reads.py"

HEADER = "import math\nimport math as m\nfrom math import tanh\n\n\ndef forward(self, x):\n"
#: Body (its first line the ``.item()``'s, line 7) -> the body fixed, None where unchanged.
CASES = {
    "s = self.log_scale.item()\nreturn self.proj(x) * math.exp(s)\n":
        "s = self.log_scale.detach().reshape(())\nreturn self.proj(x) * torch.exp(s)\n",
    "return x / math.sqrt(x.var().item())\n":
        "return x / torch.sqrt(x.var().detach().reshape(()))\n",
    "t = x.mean().item()\nreturn x * m.exp(-t) * m.cos(t)\n":
        "t = x.mean().detach().reshape(())\nreturn x * torch.exp(-t) * torch.cos(t)\n",
    "return x + tanh(self.bias.item())\n":
        "return x + torch.tanh(self.bias.detach().reshape(()))\n",
    "t = x.mean().item()\nreturn 2.0 * math.fabs(t) * x\n":
        "t = x.mean().detach().reshape(())\nreturn 2.0 * torch.abs(t) * x\n",
    # read as a Python number too: kept
    "t = x.mean().item()\nself.seen = t\nreturn math.exp(t) * x\n": None,
    # the math result returned, or only beside number literals: a number is wanted
    "t = x.mean().item()\nreturn math.exp(t)\n": None,
    "t = x.mean().item()\ny = math.exp(t) * 2\nreturn x + y\n": None,
    # a function torch has no counterpart of under that name, an expression argument
    "return x * math.floor(x.sum().item())\n": None,
    "return x * math.exp(x.sum().item() + 1)\n": None,
}


def _source(body: str) -> str:
    return HEADER + "".join(f"    {line}\n" for line in body.splitlines())


@pytest.mark.parametrize("body", list(CASES))
def test_a_number_feeding_math_only_is_kept_a_tensor(body: str) -> None:
    source, expected = _source(body), CASES[body]
    fixed = math_fixes.item_math_to_torch(source, 7)
    assert fixed == (source if expected is None else _source(expected))
    assert math_fixes.item_math_to_torch(fixed, 7) == fixed


def _plan(body: str) -> list:
    source = _source(body)
    failure = Failure(code="GB0124", kind=graph_break_kind("GB0124"), message="",
                      path="/w/m.py", line=7, column=9, end_line=7, end_column=30)
    module = ModuleResult(path="/w/m.py", line=1, column=1, end_line=1, end_column=2,
                          class_name="Reads", qualified_name="m:Reads", status="failed")
    return value_plan.fixes_of(failure, module, source, {"/w/m.py": source}.get, run_here)


def test_the_rewrite_is_offered_instead_of_the_option_and_no_option_reaching_math() -> None:
    [rewrite] = _plan("s = self.log_scale.item()\nreturn self.proj(x) * math.exp(s)\n")
    assert rewrite.preferred and not rewrite.safe and "torch.exp(t)" in rewrite.title
    # The option would move the break into math.exp: nothing is offered.
    assert _plan("t = x.mean().item()\nself.seen = t\nreturn math.exp(t) * x\n") == []
    # No math: the option, as before.
    assert _plan("t = x.mean().item()\nreturn torch.clamp(x, min=t)\n")


@pytest.mark.slow
@pytest.mark.matrix
@pytest.mark.timeout(1800)  # four classes compiled twice per backend, and a check with --fix
def test_fix_all_keeps_math_on_tensors_outputs_kept(tmp_path: Path) -> None:
    run = fixed_and_measured(CORPUS, tmp_path)
    assert run.log.count("Keep the number a 0-d tensor") == len(run.inputs), run.log
    assert "capture_scalar_outputs" not in run.path.read_text()
    for name in run.inputs:
        assert_breaks_gone_outputs_kept(run, name)
