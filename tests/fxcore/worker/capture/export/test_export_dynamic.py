"""Dynamic dimensions under the export capture mode (FX403): the ``dynamic`` option of a
module's configuration, validated, passed to torch.export as ``dynamic_shapes``, and a
violated dimension reported at the user's line whose guard violated it.

In this process (no fork) as tests/fxcore/worker/capture/export/test_export_capture.py: each
class of tests/corpus/export/export_dynamic.py is built on meta and captured with its
``DYNAMIC_SHAPES``; the violated dimensions and torch's suggested fixes must equal what real
torch.export found on CPU with real tensors and the same ``dynamic_shapes``
(computed in this run by scripts/export_ground_truth.py, ``dynamic``), at the lines marked
``# FX403``. One test goes through the CLI and its forked workers.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from real_torch_answers import dynamic_export_keys, export_answers
from test_export_capture import captured as corpus_capture

from fxcore.model.job_spec import DynamicDim
from fxcore.worker.capture.export import torch_hooks
from fxcore.worker.job.capture_target import CaptureRecord
from fxcore.workspace.config import parse_config
from fxcore.workspace.discovery import top_level_classes

from cli_support import fx_lsp

#: Compared with real torch on the installed torch: run under every torch series too.
pytestmark = pytest.mark.matrix

CORPUS = Path(__file__).parents[4] / "corpus" / "export"
FILE = "export_dynamic.py"
#: Real torch's answers, computed in this run on the installed torch.
EXPECTED = export_answers()
DYNAMIC_KEYS = sorted(dynamic_export_keys())


@pytest.fixture(scope="module", autouse=True)
def corpus_on_path() -> Iterator[None]:
    sys.path.insert(0, str(CORPUS))
    yield
    sys.path.remove(str(CORPUS))


def captured(name: str, with_dynamic: bool = True) -> CaptureRecord:
    module = importlib.import_module(FILE.removesuffix(".py"))
    entry = {"dynamic": module.DYNAMIC_SHAPES[name]} if with_dynamic else {}
    config, problems = parse_config({"modules": {name: entry}})
    assert problems == []
    return corpus_capture(f"{FILE}:{name}", config=config)[2]


def marked_lines() -> set[int]:
    lines = (CORPUS / FILE).read_text(encoding="utf-8").splitlines()
    return {number for number, text in enumerate(lines, 1) if text.endswith("# FX403")}


def test_the_corpus_has_kept_and_violated_dimensions() -> None:
    verdicts = {EXPECTED[key]["dynamic"]["verdict"] for key in DYNAMIC_KEYS}
    assert len(DYNAMIC_KEYS) == 4 and verdicts == {"ok", "failed"}


@pytest.mark.parametrize("key", DYNAMIC_KEYS)
def test_capture_on_meta_matches_real_export_with_dynamic_shapes(key: str) -> None:
    expected = EXPECTED[key]["dynamic"]
    record = captured(key.split(":")[1])
    assert record.notes == [] and record.not_checked is None
    if expected["verdict"] == "ok":
        assert record.failures == [] and record.graph_module is not None
        return
    assert record.graph is None
    assert [f.code for f in record.failures] == ["FX403"] * len(expected["violated"])
    for failure, name in zip(record.failures, expected["violated"], strict=True):
        assert failure.path == str(CORPUS / FILE)
        assert failure.line in marked_lines()
        assert f"'{name}'" in failure.message
        for fix in expected["suggested_fixes"]:
            assert fix in failure.message


def test_specialised_dimension_is_reported_at_the_comparison() -> None:
    (failure,) = captured("SpecialisesBatch").failures
    assert "if x.shape[0] == 4:" in (CORPUS / FILE).read_text().splitlines()[failure.line - 1]
    assert "specialized it to be a constant (4)" in failure.message
    assert "torch suggests: batch = 4." in failure.message
    assert "`Eq(" in failure.message


def test_guard_inside_a_helper_is_reported_in_the_helper() -> None:
    (failure,) = captured("SpecialisesInHelper").failures
    line = (CORPUS / FILE).read_text().splitlines()[failure.line - 1]
    assert "a.view(2, 2, -1)" in line
    assert [frame.function for frame in failure.frames
            if frame.path == str(CORPUS / FILE)] == ["forward", "pair_up"]


def test_without_dynamic_config_the_same_classes_export() -> None:
    for key in DYNAMIC_KEYS:
        record = captured(key.split(":")[1], with_dynamic=False)
        assert record.failures == [] and record.graph_module is not None


def test_without_the_guard_hook_the_violation_is_at_the_class(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A ShapeEnv that can still be resumed after a data-dependent guard, but logs no guard.
    monkeypatch.setattr(torch_hooks, "ShapeEnv",
                        type("ShapeEnv", (), {"evaluate_expr": lambda self: None}))
    assert torch_hooks.missing_guard_log() == "ShapeEnv._log_guard is missing"
    record = captured("NarrowsBatch")
    (failure,) = record.failures
    source = top_level_classes((CORPUS / FILE).read_text(encoding="utf-8"))["NarrowsBatch"]
    assert (failure.code, failure.line) == ("FX403", source.name_span.line)
    assert "torch suggests: batch = Dim('batch', max=16)." in failure.message
    assert record.notes == [
        "A dynamic dimension this code specialises is reported at the class: this torch "
        "cannot say which line added a guard (ShapeEnv._log_guard is missing)."]


@pytest.mark.parametrize(("dynamic_toml", "problem"), [
    ('"batch"', "dynamic must be a table such as"),
    ('{x = "batch"}', "dynamic.x must be a table of dimension index -> name"),
    ('{x = {first = "batch"}}', "dynamic.x.first: the key must be a dimension index"),
    ('{x = {0 = "2batch"}}', "dynamic.x.0: 'name' must be a Python identifier"),
    ('{x = {0 = {name = "batch", min = 8, max = 4}}}',
     "dynamic.x.0: 'min' (8) is greater than 'max' (4)"),
    ('{x = {0 = {name = "batch", max = -1}}}', "dynamic.x.0: 'max' must be a non-negative"),
    ('{x = {0 = {name = "batch", step = 2}}}', "dynamic.x.0: unknown key(s) step"),
    ('{x = {0 = "batch"}, y = {0 = {name = "batch", max = 8}}}',
     "dynamic.y.0: 'batch' is given another range elsewhere"),
])
def test_bad_dynamic_option_is_a_clear_problem(dynamic_toml: str, problem: str) -> None:
    import tomllib
    table = tomllib.loads(f'[modules."m:Net"]\ndynamic = {dynamic_toml}\n')
    _, problems = parse_config(table)
    assert len(problems) == 1 and problem in problems[0], problems


def test_dynamic_option_is_read() -> None:
    import tomllib
    table = tomllib.loads('[modules."m:Net"]\ndynamic = {x = {0 = "batch", '
                          '1 = {name = "seq", min = 2, max = 64}}, y = {0 = "batch"}}\n')
    config, problems = parse_config(table)
    assert problems == []
    assert config.modules["m:Net"].dynamic == {
        "x": {0: DynamicDim("batch"), 1: DynamicDim("seq", 2, 64)},
        "y": {0: DynamicDim("batch")}}


def test_cli_reports_fx403_through_forked_workers(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(
        "from torch import nn\n\n\nclass Net(nn.Module):\n"
        "    def forward(self, x):\n"
        "        if x.shape[0] == 4:\n"
        "            return x + 1\n"
        "        return x * 2\n")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.fx-lsp.modules."model:Net"]\ninputs = {x = "float32[4, 8]"}\n'
        'dynamic = {x = {0 = {name = "batch", min = 2, max = 64}}}\n')
    completed = fx_lsp("check", "--no-cache", "--mode", "export", "--output-format", "json",
                       "model.py", cwd=tmp_path)
    assert "Traceback" not in completed.stderr, completed.stderr[-2000:]
    report = json.loads(completed.stdout)
    assert report["config_problems"] == []
    (diagnostic,) = report["diagnostics"]
    assert (diagnostic["code"], diagnostic["line"]) == ("FX403", 6)
    assert "torch suggests: batch = 4." in diagnostic["message"]
    assert completed.returncode == 1
