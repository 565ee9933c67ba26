"""Batch dimensions the code specialises, found without configuration (FX407).

In this process (no fork) as tests/test_export_capture.py: each class of the export corpus
that real torch.export exports is built on meta, captured, and asked for its hints; its FX407
lines and the sizes torch suggests must equal what real ``torch.export`` with ``Dim.AUTO`` on
the first dimension of each input finds on CPU with real tensors (computed in this run by
scripts/export_ground_truth.py, ``auto_batch``: the inputs the exported program fixes, and
the line torch's own shape log gives the guard that fixed each). One test goes through the
CLI and its forked workers.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from real_torch_answers import export_answers
from test_export_capture import captured_by_default

from fxcore.worker.capture.export.capture import ExportCapture

from cli_support import fx_lsp

#: Compared with real torch on the installed torch: run under every torch series too; a
#: second export of each class that exports, so not in the fast tier.
pytestmark = [pytest.mark.matrix, pytest.mark.slow]

CORPUS = Path(__file__).parent / "corpus" / "export"
#: Real torch's answers, computed in this run on the installed torch.
EXPECTED = export_answers()
EXPORTED = sorted(key for key in EXPECTED if "auto_batch" in EXPECTED[key])


@pytest.fixture(scope="module", autouse=True)
def corpus_on_path() -> Iterator[None]:
    sys.path.insert(0, str(CORPUS))
    yield
    sys.path.remove(str(CORPUS))


def test_the_corpus_has_specialised_and_dynamic_batches() -> None:
    specialised = [key for key in EXPORTED if EXPECTED[key]["auto_batch"]["specialised"]]
    assert len(specialised) >= 6 and len(EXPORTED) - len(specialised) >= 10


@pytest.mark.parametrize("key", EXPORTED)
def test_batch_specialisations_match_real_export_with_dim_auto(key: str) -> None:
    expected = EXPECTED[key]["auto_batch"]["specialised"]
    target, context, record = captured_by_default(key)
    if record.not_checked is not None or record.graph_module is None:
        pytest.skip(f"{key} is not exported whole on meta: no hints are asked of it")
    hints = [hint for hint in ExportCapture().hints(context, target, record)
             if hint.code == "FX407"]
    path = str(CORPUS / key.split(":")[0])
    assert {(hint.path, hint.line) for hint in hints} == \
        {(path, answer["line"]) for answer in expected.values()}
    said = " ".join(hint.message for hint in hints)
    for argument, answer in expected.items():
        assert f"batch_{argument} = {answer['size']}" in said
        assert f"'{argument}': {{0: {answer['size']}}}" in said


def test_a_marked_line_is_where_the_batch_is_specialised() -> None:
    lines = (CORPUS / "export_batch.py").read_text(encoding="utf-8").splitlines()
    marked = {number for number, text in enumerate(lines, 1) if text.endswith("# FX407")}
    found = {answer["line"] for key in EXPORTED if key.startswith("export_batch.py:")
             for answer in EXPECTED[key]["auto_batch"]["specialised"].values()}
    assert found == marked


def test_cli_reports_fx407_through_workers_and_not_with_dynamic_configured(tmp_path: Path) -> None:
    (tmp_path / "model.py").write_text(
        "from torch import nn\n\n\nclass Net(nn.Module):\n"
        "    def forward(self, x):\n"
        "        if x.shape[0] == 4:\n"
        "            return x + 1\n"
        "        return x * 2\n")
    table = '[tool.fx-lsp.modules."model:Net"]\ninputs = {x = "float32[4, 8]"}\n'
    (tmp_path / "pyproject.toml").write_text(table)

    def diagnostics() -> list[dict[str, object]]:
        completed = fx_lsp("check", "--no-cache", "--mode", "export", "--output-format",
                           "json", "model.py", cwd=tmp_path)
        assert "Traceback" not in completed.stderr, completed.stderr[-2000:]
        return json.loads(completed.stdout)["diagnostics"]  # type: ignore[no-any-return]

    (diagnostic,) = diagnostics()
    assert (diagnostic["code"], diagnostic["line"], diagnostic["severity"]) == \
        ("FX407", 6, "warning")
    assert "dynamic_shapes={'x': {0: 4}}" in str(diagnostic["message"])
    # Configured dimensions are FX403's, as before.
    (tmp_path / "pyproject.toml").write_text(table + 'dynamic = {x = {0 = "batch"}}\n')
    assert [(d["code"], d["line"]) for d in diagnostics()] == [("FX403", 6)]
    # An empty `dynamic` (what FX403's fix to a static size leaves) says the shapes are static.
    (tmp_path / "pyproject.toml").write_text(table + "dynamic = {}\n")
    assert diagnostics() == []
