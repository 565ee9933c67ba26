"""A tensor torch.export did not trace (read through ``.data``, also in an
``autograd.Function``'s forward with ``set_``) becomes a fake constant of the exported program:
real ``torch.export.export`` on real inputs rejects it ("We found a fake tensor in the exported
program constant's list"), but torch skips that check when the inputs are fake, as fx-lsp's
are. fx-lsp makes the check itself (``fxcore/worker/capture/export/fake_constants.py``), so its
verdict through the CLI is real torch's, computed in the same run on the CPU, non-strict and
strict. Compared with real torch on the installed torch: run under every torch
series too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch
from real_torch_answers import export_errors

from fxcore.worker.capture.export import fake, fake_constants, torch_hooks

from cli_support import fx_lsp

pytestmark = pytest.mark.matrix

MODELS = """\
import torch
from torch import nn


class CopyOut(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight):
        out = torch.empty(0)
        out.set_(weight.data)  # untraced
        return x * out

    @staticmethod
    def backward(ctx, grad):
        return grad, None


class SetInFunction(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(2, 8))

    def forward(self, x):
        return CopyOut.apply(x, self.weight)


class DataRead(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        y = self.proj(x)
        return y + self.proj.bias.data  # untraced


class RollingCache(nn.Module):
    def __init__(self):
        super().__init__()
        self.cache = nn.Parameter(torch.zeros(1, 10, 8), requires_grad=False)
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        rolled = torch.roll(self.cache.data, -x.size(1), dims=1)  # untraced
        rolled[:, -x.size(1):, :] = x
        self.cache.data = rolled
        return self.proj(self.cache)


class Constants(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)
        self.table = torch.arange(8.0)

    def forward(self, x):
        return self.proj(x) + self.table + torch.tensor([1.0]) + self.proj.bias.detach()
"""

INPUTS = {"SetInFunction": {"x": "float32[2, 8]"}, "DataRead": {"x": "float32[2, 8]"},
          "RollingCache": {"x": "float32[1, 3, 8]"}, "Constants": {"x": "float32[2, 8]"}}
#: What real torch.export raises on real inputs for a class marked ``# untraced``.
REJECTED = "RuntimeError: We found a fake tensor in the exported program constant's list."


def untraced_line(name: str) -> int | None:
    """The line marked ``# untraced`` in ``name``'s code (an ``autograd.Function`` its
    forward calls included), None when it has none."""
    lines = MODELS.splitlines()
    start = lines.index(f"class {name}(nn.Module):")
    owned = [start] + ([lines.index("class CopyOut(torch.autograd.Function):")]
                       if name == "SetInFunction" else [])
    for first in owned:
        for number in range(first, len(lines)):
            if number > first and lines[number].startswith("class "):
                break
            if lines[number].endswith("# untraced"):
                return number + 1
    return None


def checked(root: Path, strict: bool) -> dict[str, Any]:
    """``fx-lsp check --output-format json`` of the workspace in export mode."""
    root.mkdir()
    (root / "models.py").write_text(MODELS, encoding="utf-8")
    tables = "".join(f"\n[tool.fx-lsp.modules.{name}]\ninputs = {{x = \"{specs['x']}\"}}\n"
                     for name, specs in INPUTS.items())
    (root / "pyproject.toml").write_text(
        f'[tool.fx-lsp]\nmodes = ["export"]\nexport-strict = {str(strict).lower()}\n{tables}',
        encoding="utf-8")
    completed = fx_lsp("check", "--no-cache", "--output-format", "json", ".", cwd=root)
    assert completed.stderr == "", completed.stderr
    return json.loads(completed.stdout)


@pytest.fixture(scope="module")
def real(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str | None]]:
    """Real torch.export's errors on the CPU, in this run."""
    path = tmp_path_factory.mktemp("real") / "models.py"
    path.write_text(MODELS, encoding="utf-8")
    return export_errors(path, INPUTS)


def test_the_workspace_is_what_real_export_says(real: dict[str, dict[str, str | None]]
                                                ) -> None:
    """The classes marked ``# untraced`` are those real non-strict export rejects for such a
    constant, where this torch has that check; without it, real export rejects none."""
    marked = [name for name in INPUTS if untraced_line(name) is not None]
    assert marked == ["SetInFunction", "DataRead", "RollingCache"]
    rejected = [name for name, errors in real.items()
                if (errors["non-strict"] or "").startswith(REJECTED)]
    has_check = callable(torch_hooks.made_up_constant_test())
    assert rejected == (marked if has_check else []), real


@pytest.mark.parametrize("strict", [False, True], ids=["non-strict", "export-strict"])
def test_verdicts_are_real_exports(tmp_path: Path, real: dict[str, dict[str, str | None]],
                                   strict: bool) -> None:
    report = checked(tmp_path / "workspace", strict)
    statuses = {module["class"]: module["status"] for module in report["modules"]}
    for name in INPUTS:
        rejected = real[name]["non-strict"]
        line = untraced_line(name) if rejected else None
        assert statuses[name] == ("failed" if rejected else "traceable"), (name, rejected)
        found = [(d["code"], d["line"]) for d in report["diagnostics"] if name in d["classes"]]
        assert found == ([("FX499", line)] if line else []), (name, rejected)
        if line is not None:
            (diagnostic,) = [d for d in report["diagnostics"] if name in d["classes"]]
            # The constant real torch names is the one fx-lsp names.
            assert "following model attribute: lifted_tensor_0." in rejected
            assert "the constant `lifted_tensor_0`" in diagnostic["message"]
            assert "We found a fake tensor in the exported program constant's list" in \
                diagnostic["message"]
        # Real strict export lets such constants through: no FX405, no note of one.
        assert real[name]["strict"] is None, (name, real[name]["strict"])
    assert all(module["capture_notes"] == [] for module in report["modules"])


class _DataRead(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.nn.Parameter(torch.ones(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.scale.data


def _exported_on_fake_inputs() -> torch.export.ExportedProgram:
    mode = fake.new_mode()
    with mode:
        x = torch.empty(2, 4)
    return torch.export.export(_DataRead(), (x,), strict=False)


def test_the_check_follows_what_this_torch_has(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch's own switch and name test decide; without the test, a reason to note."""
    if not callable(torch_hooks.made_up_constant_test()):
        pytest.skip(f"torch {torch.__version__} does not reject fake constants: "
                    f"{torch_hooks.made_up_constant_test()}")
    program = _exported_on_fake_inputs()
    (failure,), unchecked = fake_constants.untraced_constants(program)
    assert unchecked is None and failure.kind == "export-untraced-constant"
    assert [(position.filename, position.function) for position in failure.stack][-1] == \
        (__file__, "forward")
    monkeypatch.setattr(torch._export.config, "error_on_lifted_constant_tensors", False)
    assert fake_constants.untraced_constants(program) == ([], None)
    monkeypatch.setattr(torch._export.config, "error_on_lifted_constant_tensors", True)
    monkeypatch.delattr(torch.export._trace, "_is_bogus_const_name")
    assert torch_hooks.made_up_constant_test() == \
        "torch.export._trace._is_bogus_const_name is missing"
    assert fake_constants.untraced_constants(program) == \
        ([], "torch.export._trace._is_bogus_const_name is missing")
