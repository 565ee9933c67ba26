"""``torch.Generator("cuda")`` in the GPU view (``fxcore.worker.devices.cuda_generators``).

torch's CUDA generator is made in C++, which asks the CUDA runtime for the current stream: on a
CUDA build without a GPU the driver was loaded in the worker and the import failed ("CUDA
driver version is insufficient"), on a CPU build it raised ("Cannot get CUDA generator
without ATen_cuda library"); either way the file got FX100 and no verdict. In the view such a
generator is the view's own, and a class drawing from generators made at import and in
``__init__`` gets the verdicts the same class written for the CPU gets, which are real
torch's on the CPU (a GPU's trace takes a generator the same way whatever its device: fake and
meta kernels never read it). tests/fxcore/worker/devices/test_driver_loads.py checks that no
worker loads the driver for such a file on CUDA builds."""

from __future__ import annotations

import contextlib
import copy
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch
from real_torch_answers import compile_answers_of, export_errors

from fx_lsp.cli.output_formats.json_report import parse_report
from fxcore.host.worker_environment import HIDDEN_DEVICES
from fxcore.worker.devices import cuda_generators

import cli_support

#: Generators made as the module is imported and in ``__init__``, drawn from in ``forward`` by
#: ``torch.randn``, and by ``torch.rand`` for a dropout mask, and seeded by ``manual_seed``.
DRAWS = """\
import torch
from torch import nn

NOISE = torch.Generator("cuda")
NOISE.manual_seed(0)


class NoisyDropout(nn.Module):
    def __init__(self, p=0.25):
        super().__init__()
        self.p = p
        self.generator = torch.Generator(device="cuda")
        self.generator.manual_seed(1)
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        noise = torch.randn(x.shape, generator=NOISE, device=x.device)
        keep = torch.rand(x.shape, generator=self.generator, device=x.device) > self.p
        return self.fc(x + noise) * keep / (1 - self.p)
"""
INPUTS = {"NoisyDropout": {"x": "float32[2, 8]"}}


#: Generators made in ``forward``, by every spelling a CPU class uses, drawn from and tested by
#: ``isinstance``: what code judged for the CPU holds is torch's own generator, however
#: ``torch.Generator`` is caught (before torch 2.13 the name stands for fx-lsp's class).
DRAWS_IN_FORWARD = """\
import torch
from torch import Generator, nn


class DrawsInForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        generator = torch.Generator()
        generator.manual_seed(0)
        noise = torch.randn(x.shape, generator=generator)
        if isinstance(generator, torch.Generator) and type(generator) is torch._C.Generator:
            noise = noise * 2
        other = Generator("cpu")
        return self.fc(x + noise) * torch.rand(x.shape, generator=other)
"""


def _verdicts(workspace: Path, device: str, source: str = DRAWS,
              name: str = "NoisyDropout") -> dict[str, Any]:
    """Each mode's (status, [(line, code)]) for class ``name`` of the file written for
    ``device`` and judged for it."""
    workspace.mkdir()
    (workspace / "draws.py").write_text(source.replace('"cuda"', f'"{device}"'))
    (workspace / "pyproject.toml").write_text(
        f'[tool.fx-lsp]\ndevice = "{device}"\n\n'
        f'[tool.fx-lsp.modules."draws:{name}"]\ninputs = {{x = "float32[2, 8]"}}\n')
    completed = cli_support.fx_lsp("check", "--no-cache", "--mode", "fx,export,compile",
                                   "--output-format", "json", ".", cwd=workspace)
    assert completed.returncode in (0, 1), completed.stderr
    report = parse_report(completed.stdout)
    # The file imports (no FX100) and its class is judged in every mode.
    assert not [d for d in report["diagnostics"] if not d["classes"]], report["diagnostics"]
    return {module["mode"]: (module["status"], sorted(
        (d["line"], d["code"]) for d in report["diagnostics"]
        if name in d["classes"] and d["mode"] == module["mode"]))
        for module in report["modules"]}


@pytest.mark.matrix
@pytest.mark.slow
def test_cuda_generators_get_the_verdicts_of_cpu_ones(tmp_path: Path) -> None:
    on_gpu = _verdicts(tmp_path / "cuda", "cuda")
    on_cpu = _verdicts(tmp_path / "cpu", "cpu")
    assert set(on_gpu) == {"fx", "export", "compile"}, on_gpu
    assert on_gpu == on_cpu
    # The CPU's verdicts are real torch's on the CPU: compile's breaks at the draws, and
    # non-strict export where it takes a generator (2.13 on; before, "argument of type").
    real_compile = compile_answers_of(tmp_path / "cpu" / "draws.py")["NoisyDropout"]
    assert [[line, code] for line, code in on_cpu["compile"][1]] == real_compile["breaks"]
    real_export = export_errors(tmp_path / "cpu" / "draws.py", INPUTS)["NoisyDropout"]
    assert (on_cpu["export"][0] == "traceable") == (real_export["non-strict"] is None), \
        real_export


@pytest.mark.matrix
@pytest.mark.slow
def test_generators_a_class_judged_for_the_cpu_makes_in_forward_get_real_torchs_verdicts(
        tmp_path: Path) -> None:
    on_cpu = _verdicts(tmp_path / "cpu", "cpu", DRAWS_IN_FORWARD, "DrawsInForward")
    real_compile = compile_answers_of(tmp_path / "cpu" / "draws.py")["DrawsInForward"]
    assert [[line, code] for line, code in on_cpu["compile"][1]] == real_compile["breaks"]
    real_export = export_errors(tmp_path / "cpu" / "draws.py",
                                {"DrawsInForward": INPUTS["NoisyDropout"]})["DrawsInForward"]
    assert (on_cpu["export"][0] == "traceable") == (real_export["non-strict"] is None), \
        real_export


def test_a_view_generator_is_taken_where_torch_takes_a_generator() -> None:
    """Outside the view this torch's CUDA generator needs CUDA (a CPU build raises; a CUDA
    build initialises the driver, not tried here); in it, the generator is made without, says
    CUDA, and is taken by torch's checks, meta draws, copies and ``clone_state``."""
    if torch.version.cuda is None:
        with pytest.raises(RuntimeError, match="Cannot get CUDA generator"):
            torch.Generator("cuda")
    with contextlib.ExitStack() as stack:
        assert cuda_generators.generators_in_view(stack) is None
        made = [torch.Generator("cuda"), torch.Generator(device="cuda:0")]
        cpu = torch.Generator("cpu")
    assert [generator.device for generator in made] == [torch.device("cuda"),
                                                        torch.device("cuda", 0)]
    assert type(cpu) is torch._C.Generator and cpu.device == torch.device("cpu")
    generator = made[0]
    assert isinstance(generator, torch.Generator) and isinstance(generator, torch._C.Generator)
    generator.manual_seed(3)
    assert generator.initial_seed() == 3
    drawn = torch.randn(2, 3, generator=generator, device="meta")
    assert drawn.shape == (2, 3) and drawn.is_meta
    assert torch.rand(4, generator=generator, device="meta").bernoulli(
        generator=generator).is_meta
    for copied in (copy.deepcopy(generator), generator.clone_state()):
        assert type(copied) is type(generator) and copied.device == generator.device
        assert copied.initial_seed() == 3
    # Left as it was: torch's own generator type again.
    assert torch.Generator is torch._C.Generator
    assert type(torch.Generator("cpu")) is torch._C.Generator


def test_a_cuda_generator_the_view_cannot_make_is_refused_by_name(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Where this torch's dynamo would take the view's generator for a script object (no
    variable class the view knows), ``torch.Generator("cuda")`` is refused with a reason that
    names it, and never reaches torch's CUDA generator: at import that is the file's FX100."""
    from torch._library.opaque_object import is_opaque_type

    if not is_opaque_type(torch._C.Generator):
        pytest.skip("this torch takes generators as plain objects everywhere: no refusal")
    monkeypatch.setattr(cuda_generators, "_SCRIPT_OBJECT_VARIABLES", ())
    with contextlib.ExitStack() as stack:
        gap = cuda_generators.generators_in_view(stack)
        assert gap is not None
        with pytest.raises(cuda_generators.CudaGeneratorError) as refused:
            torch.Generator("cuda")
        assert type(torch.Generator("cpu")) is torch._C.Generator
    assert '`torch.Generator("cuda")` makes a CUDA generator' in str(refused.value)
    assert "never initialises CUDA" in str(refused.value) and gap in str(refused.value)


@pytest.mark.slow
def test_a_class_judged_for_the_cpu_is_refused_a_cuda_generator() -> None:
    """Outside the view (a class judged for the CPU), ``torch.Generator("cuda")`` reached
    torch's CUDA generator: on a CUDA build the driver, on a CPU build "Cannot get CUDA
    generator". The guard of every fx-lsp process refuses it as it refuses CUDA's
    initialisation, saying how to judge the class for a GPU: by either spelling, and for a
    user's class deriving from torch's (before torch 2.13 the name ``torch.Generator`` stands
    for fx-lsp's class; from 2.13 its metaclass catches the call). A CPU generator is torch's
    own, and ``isinstance`` answers as without the guard."""
    script = ("import torch\n"
              "from fxcore.worker.devices import accelerator_guard\n"
              "replaced = accelerator_guard.guard()\n"
              "from torch import Generator\n"
              "class Derived(Generator):\n"
              "    pass\n"
              "made = [torch.Generator(), torch.Generator('cpu'), Generator(device='cpu')]\n"
              "assert {type(generator) for generator in made} == {torch._C.Generator}\n"
              "assert all(isinstance(generator, torch.Generator) for generator in made)\n"
              "assert isinstance(Derived(), Derived) and not isinstance(made[0], Derived)\n"
              "for call in (lambda: torch.Generator(device='cuda'),\n"
              "             lambda: Generator(torch.device('cuda', 0)),\n"
              "             lambda: Derived('cuda')):\n"
              "    try:\n"
              "        call()\n"
              "    except accelerator_guard.NoAcceleratorError as error:\n"
              "        print(error)\n")
    completed = subprocess.run([sys.executable, "-c", script], capture_output=True,
                               text=True, timeout=120, env={**os.environ, **HIDDEN_DEVICES})
    assert completed.returncode == 0, completed.stderr[-3000:]
    refusals = completed.stdout.splitlines()
    assert len(refusals) == 3, completed.stdout
    assert all("never initialise CUDA" in refusal and 'device = "cuda"' in refusal
               for refusal in refusals), refusals
