"""Meta is not the CPU: a class that asks whether its tensors are on meta
(``t.is_meta``, ``t.device.type == "meta"``), in its constructor, a helper the constructor
calls or forward, hears yes where fx-lsp builds it and no on the CPU. fx-lsp judges it on fake
CPU tensors instead (``fxcore.worker.devices.meta_branches``), in every mode, and says so; where
it cannot build it so, the class has no verdict, never an error only meta raises.

Each class is compared, in the same test, with real torch on the CPU on hand-written inputs:
plain ``torch.fx.symbolic_trace`` (torch.fx's verdict, and the line it stops at),
``torch.export.export(strict=False)`` (export's) and an eager call (compile's: these classes
have no graph break, so compile's verdict is whether forward runs)."""

from __future__ import annotations

import traceback
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
from source_modules import load_module
from torch import fx

from fx_lsp.cli.output_formats.json_report import parse_report
from fxcore.host.engine import Engine
from fxcore.model.job_spec import EngineConfig, ModuleConfig
from fxcore.model.results import ModuleResult
from fxcore.model.tensor_spec import TensorSpec

import cli_support
from engine_support import Workspace

#: Compared with real torch on the installed torch: run under every torch series too.
pytestmark = pytest.mark.matrix

MODES = ("fx", "export", "compile")

SOURCE = '''
import torch
from torch import nn


class InConstructor(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)
        self.register_buffer("scale", torch.ones(16))
        if self.scale.is_meta:
            return
        self.register_buffer("bias", torch.zeros(16))

    def forward(self, x):
        return self.proj(x) * self.scale + self.bias


class InHelper(nn.Module):
    """A flag the meta branch leaves unset, and forward raises without it."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)
        self.ready = False
        self.set_up()

    def set_up(self):
        if self.proj.weight.is_meta:
            return
        self.register_buffer("table", torch.arange(16.0))
        self.ready = True

    def forward(self, x):
        if not self.ready:
            raise RuntimeError("call set_up() first")
        return self.proj(x) + self.table


class InForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)
        self.register_buffer("table", torch.arange(16.0))

    def forward(self, x):
        if self.table.is_meta:
            raise RuntimeError("the table was never loaded")
        return self.proj(x) + self.table


class DeviceTypeInConstructor(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)
        if self.proj.weight.device.type == "meta":
            self.extra = None
        else:
            self.extra = nn.Linear(16, 16)

    def forward(self, x):
        return self.extra(self.proj(x))


class DeviceTypeInForward(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, x):
        if x.device.type in ("meta",):
            raise RuntimeError("no data to run on")
        return self.proj(x)


class RoPE(nn.Module):
    """A rotary embedding that skips building its cache on meta, cut down."""

    def __init__(self, dim: int = 16, max_seq_len: int = 64):
        super().__init__()
        self.dim = dim
        self.max_seq_len = max_seq_len
        theta = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("theta", theta, persistent=False)
        self.is_cache_built = False
        self.build_cache()

    def build_cache(self):
        if self.theta.is_meta:
            return
        seq = torch.arange(self.max_seq_len, dtype=self.theta.dtype)
        idx = torch.einsum("i,j->ij", seq, self.theta).float()
        cache = torch.stack([torch.cos(idx), torch.sin(idx)], dim=-1)
        self.register_buffer("cache", cache, persistent=False)
        self.is_cache_built = True

    def forward(self, x, input_pos=None):
        if not self.is_cache_built:
            raise RuntimeError("RoPE cache is not built. Please call rope_init() first.")
        seq_len = x.size(1)
        rope_cache = self.cache[:seq_len]
        xshaped = x.float().reshape(x.shape[0], x.shape[1], x.shape[2], -1, 2)
        rope_cache = rope_cache.view(-1, xshaped.size(1), 1, xshaped.size(3), 2)
        out = torch.stack([xshaped[..., 0] * rope_cache[..., 0]
                           - xshaped[..., 1] * rope_cache[..., 1],
                           xshaped[..., 1] * rope_cache[..., 0]
                           + xshaped[..., 0] * rope_cache[..., 1]], -1)
        return out.flatten(3).type_as(x)


class ReadsDataOffMeta(nn.Module):
    """Off meta its constructor reads a tensor's value, which fake tensors do not have."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)
        self.steps = 1 if self.proj.weight.is_meta else int(torch.arange(3).sum().item())

    def forward(self, x):
        return self.proj(x) * self.steps


class Plain(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, x):
        return self.proj(x).relu()
'''

#: The hand-written inputs of each class (RoPE's configured, as the search cannot guess 4-d
#: inputs past torch.fx's stop at its slice).
SHAPES = {"RoPE": (2, 8, 4, 16)}
SHAPE = (2, 16)
#: The verdicts whose capture asks no tensor whether it is on meta: torch.fx traces ``x`` as a
#: Proxy, whose ``device`` is a node of the graph (then a branch on a traced value, as on the
#: CPU), so the class is judged on meta there, rightly.
ASKED_NO_TENSOR = {("DeviceTypeInForward", "fx")}


@pytest.fixture(scope="module")
def checked(engine: Engine, tmp_path_factory: pytest.TempPathFactory
            ) -> tuple[Path, dict[tuple[str, str], ModuleResult]]:
    """The file, and fx-lsp's verdicts on its classes by (class, mode)."""
    workspace = Workspace(tmp_path_factory.mktemp("meta_branches"))
    path = workspace.write("branches.py", SOURCE)
    config = EngineConfig(modes=MODES, modules={"branches:RoPE": ModuleConfig(
        inputs={"x": TensorSpec("float32", SHAPES["RoPE"])})})
    result = workspace.check(engine, "branches.py", config)
    assert not result.errors, result.errors
    return path, {(module.class_name, module.mode): module for module in result.modules}


def _stop_line(error: BaseException, path: Path) -> int:
    """The innermost line of ``path`` on ``error``'s traceback."""
    return [frame.lineno for frame in traceback.extract_tb(error.__traceback__)
            if frame.filename == str(path)][-1]


def real_torch(module: ModuleType, path: Path, name: str) -> dict[str, Any]:
    """Real torch's answers on the CPU, on a real instance and a random input: per mode,
    True where it captures the class (runs it, for compile), else the line torch.fx stops
    at (fx) or False."""
    model = getattr(module, name)()
    x = torch.randn(*SHAPES.get(name, SHAPE))
    answers: dict[str, Any] = {}
    try:
        fx.symbolic_trace(model)
        answers["fx"] = True
    except Exception as error:
        answers["fx"] = _stop_line(error, path)
    try:
        torch.export.export(model, (x,), strict=False)
        answers["export"] = True
    except Exception:
        answers["export"] = False
    try:
        model(x)
        answers["compile"] = True
    except Exception:
        answers["compile"] = False
    return answers


def fx_lsp_answers(verdicts: dict[tuple[str, str], ModuleResult], name: str
                   ) -> dict[str, Any]:
    """fx-lsp's verdicts in real torch's terms: True for traceable, the first failure's line
    for a failure in fx, False for one in the other modes."""
    answers: dict[str, Any] = {}
    for mode in MODES:
        verdict = verdicts[name, mode]
        assert verdict.status in ("traceable", "failed"), (name, mode, verdict.reason)
        if verdict.status == "traceable":
            answers[mode] = True
        else:
            answers[mode] = verdict.failures[0].line if mode == "fx" else False
    return answers


@pytest.mark.parametrize("name", ["InConstructor", "InHelper", "InForward",
                                  "DeviceTypeInConstructor", "DeviceTypeInForward", "RoPE"])
def test_a_class_that_branches_on_meta_gets_the_cpus_verdict(
        checked: tuple[Path, dict[tuple[str, str], ModuleResult]], name: str) -> None:
    path, verdicts = checked
    module = load_module(path, f"meta_branches_{name}")
    assert fx_lsp_answers(verdicts, name) == real_torch(module, path, name)
    for mode in MODES:
        notes = verdicts[name, mode].capture_notes
        judged_on_fake = any(note.startswith("Judged on fake CPU tensors, not on meta")
                             for note in notes)
        assert judged_on_fake is ((name, mode) not in ASKED_NO_TENSOR), (mode, notes)


def test_the_issues_class_gets_its_cache_and_stops_only_where_torch_fx_does(
        checked: tuple[Path, dict[tuple[str, str], ModuleResult]]) -> None:
    path, verdicts = checked
    text = path.read_text().splitlines()
    fx_failures = verdicts["RoPE", "fx"].failures
    # Plain torch.fx's own stop: a slice of a buffer by a traced size, not the missing cache.
    assert "self.cache[:seq_len]" in text[fx_failures[0].line - 1]
    assert not any("cache is not built" in failure.message
                   for mode in MODES for failure in verdicts["RoPE", mode].failures)
    note = verdicts["RoPE", "export"].capture_notes[-1]
    assert f"`.is_meta` at branches.py:{text.index('        if self.theta.is_meta:') + 1}" \
        in note


def test_no_verdict_where_the_class_cannot_be_built_on_fake_tensors(
        checked: tuple[Path, dict[tuple[str, str], ModuleResult]]) -> None:
    path, verdicts = checked
    module = load_module(path, "meta_branches_data")
    # Real torch builds and runs it: an error would be one only meta raises.
    assert real_torch(module, path, "ReadsDataOffMeta") == {mode: True for mode in MODES}
    for mode in MODES:
        verdict = verdicts["ReadsDataOffMeta", mode]
        assert (verdict.status, verdict.failures) == ("not-traced", []), mode
        assert "asks whether its tensors are on the meta device (`.is_meta` at branches.py:" \
            in verdict.reason
        assert "building it on fake tensors instead, as it runs on the CPU, failed" \
            in verdict.reason


def test_a_class_that_never_asks_is_judged_on_meta_as_before(
        checked: tuple[Path, dict[tuple[str, str], ModuleResult]]) -> None:
    path, verdicts = checked
    module = load_module(path, "meta_branches_plain")
    assert fx_lsp_answers(verdicts, "Plain") == real_torch(module, path, "Plain")
    assert verdicts["Plain", "fx"].instantiated_on == "meta"
    for mode in MODES:
        assert not any("fake CPU" in note for note in verdicts["Plain", mode].capture_notes)


def test_the_issues_file_on_the_command_line(tmp_path: Path) -> None:
    """The issue's own file and command line, with no configuration: torch.fx stops where
    plain torch.fx stops, and no mode reports the error only meta raises (export and
    compile find no inputs past that stop: no verdict, not a false one)."""
    rope = SOURCE[SOURCE.index("class RoPE"):SOURCE.index("class ReadsDataOffMeta")]
    workspace = Workspace(tmp_path)
    path = workspace.write("rope.py", "import torch\nfrom torch import nn\n\n\n" + rope)
    completed = cli_support.fx_lsp("check", "--no-cache", "--mode", ",".join(MODES),
                                   "--output-format", "json", "rope.py", cwd=tmp_path)
    assert completed.returncode in (0, 1), completed.stderr
    report = parse_report(completed.stdout)
    module = load_module(path, "meta_branches_rope_cli")
    stop = real_torch(module, path, "RoPE")["fx"]
    assert isinstance(stop, int)  # plain torch.fx cannot slice a buffer by a traced size
    diagnostics = report["diagnostics"]
    assert {(d["mode"], d["line"]) for d in diagnostics if d["severity"] == "error"} \
        == {("fx", stop)}, diagnostics
    assert not any("cache is not built" in d["message"] for d in diagnostics)
    verdicts = {module["mode"]: module for module in report["modules"]}
    assert verdicts["export"]["status"] == verdicts["compile"]["status"] == "not-traced"
