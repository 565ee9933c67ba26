"""Batch and sequence dimensions the code specialises, found without configuration (FX407).

In this process (no fork) as tests/fxcore/worker/capture/export/test_export_capture.py: each
class of the export corpus
that real torch.export exports is built on meta, captured, and asked for its hints; its FX407
lines and the sizes torch suggests must equal what real ``torch.export`` with ``Dim.AUTO`` on
the batch dimension of each input, and on its sequence dimension where its spec names one
(``int64[batch=4, seq=16]``: tests/corpus/export/export_sequence.py), finds on CPU with real
tensors (computed in this run by scripts/export_ground_truth.py, ``auto_batch``: the input
dimensions the exported program fixes, and the line torch's own shape log gives the guard that
fixed each). The CLI tests go through forked workers, where the inputs are inferred.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from real_torch_answers import export_answers
from test_export_capture import captured_by_default, decided
from torch import nn

from fxcore.model.tensor_spec import parse_spec
from fxcore.worker.capture.export.exporting import ExportCapture
from fxcore.worker.inputs.from_layers.first_layer import LayerInputs
from fxcore.worker.inputs.from_layers.graph_layers import from_annotations
from fxcore.worker.inputs.given.documented import documented_inputs

from cli_support import fx_lsp

#: Compared with real torch on the installed torch: run under every torch series too; a
#: second export of each class that exports, so not in the fast tier.
pytestmark = [pytest.mark.matrix, pytest.mark.slow]

CORPUS = Path(__file__).parents[4] / "corpus" / "export"
#: Real torch's answers, computed in this run on the installed torch, for a class when a test
#: first asks: not while collecting, which every pytest process of every tier does.
EXPECTED = export_answers()


def exported() -> list[str]:
    """The corpus classes real export exports, whose batch dimensions it was asked about."""
    return sorted(key for key in EXPECTED if "auto_batch" in EXPECTED[key])


@pytest.fixture(scope="module", autouse=True)
def corpus_on_path() -> Iterator[None]:
    sys.path.insert(0, str(CORPUS))
    yield
    sys.path.remove(str(CORPUS))


def specialised_dims(key: str) -> list[tuple[str, int, dict[str, Any]]]:
    """(input, dimension, real torch's answer) of each dimension real export fixed."""
    return [(argument, int(index), answer)
            for argument, per_argument in EXPECTED[key]["auto_batch"]["specialised"].items()
            for index, answer in per_argument.items()]


def test_the_corpus_has_specialised_and_dynamic_batches_and_sequences() -> None:
    exports = exported()
    specialised = [key for key in exports if specialised_dims(key)]
    assert len(specialised) >= 6 and len(exports) - len(specialised) >= 10
    sequences = [(key, index) for key in exports for _, index, answer in specialised_dims(key)
                 if answer["role"] == "seq"]
    # Sequences after the batch, and first (an nn.MultiheadAttention without batch_first).
    assert len(sequences) >= 5 and {index for _, index in sequences} == {0, 1}
    assert "export_sequence.py:PositionsUpToLength" in exports
    assert not specialised_dims("export_sequence.py:PositionsUpToLength")


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_batch_specialisations_match_real_export_with_dim_auto(key: str) -> None:
    if "auto_batch" not in EXPECTED[key]:
        pytest.skip(f"real torch.export does not export {key}: no dimension to compare")
    expected = EXPECTED[key]["auto_batch"]["specialised"]
    target, context, record = captured_by_default(key)
    if record.not_checked is not None or record.graph_module is None:
        pytest.skip(f"{key} is not exported whole on meta: no hints are asked of it")
    hints = [hint for hint in ExportCapture().hints(context, target, decided(key), record)
             if hint.code == "FX407"]
    path = str(CORPUS / key.split(":")[0])
    assert {(hint.path, hint.line) for hint in hints} == \
        {(path, answer["line"]) for answer in
         (answer for per_argument in expected.values() for answer in per_argument.values())}
    for line in {answer["line"] for _, _, answer in specialised_dims(key)}:
        # A hint names a dimension fixed at its line, with torch's fixes and dynamic_shapes
        # for all of them (two inputs broadcast with a table may be one hint, as one guard).
        messages = [hint.message for hint in hints if hint.line == line]
        here = [(argument, index, answer) for argument, index, answer in specialised_dims(key)
                if answer["line"] == line]
        assert all(any(message.startswith(f"With the {named(answer['role'], index)} of "
                                          f"'{argument}' dynamic")
                       for argument, index, answer in here) for message in messages), messages
        said = messages[0]
        refined = said.split("dynamic_shapes=", 1)[1]
        for argument, index, answer in here:
            assert f"{answer['role']}_{argument} = {answer['size']}" in said
            assert re.search(rf"'{argument}': \{{[^{{}}]*\b{index}: {answer['size']}\b",
                             refined), said


def named(role: str, index: int) -> str:
    return "batch dimension" if role == "batch" else f"sequence dimension (dimension {index})"


@pytest.mark.parametrize("file", ["export_batch.py", "export_sequence.py"])
def test_a_marked_line_is_where_a_dimension_is_specialised(file: str) -> None:
    lines = (CORPUS / file).read_text(encoding="utf-8").splitlines()
    marked = {number for number, text in enumerate(lines, 1) if text.endswith("# FX407")}
    found = {answer["line"] for key in exported() if key.startswith(f"{file}:")
             for _, _, answer in specialised_dims(key)}
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


def test_cli_makes_the_sequence_of_inferred_inputs_dynamic(tmp_path: Path) -> None:
    """Without configuration, the inputs' source says which dimension is the sequence: token
    ids to an nn.Embedding (batch, sequence), nn.MultiheadAttention without batch_first
    (sequence, batch, features), a jaxtyping annotation naming ``seq``; FX407 names it."""
    (tmp_path / "model.py").write_text(
        "from torch import nn\n\n\n"
        "class Tagger(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.embed = nn.Embedding(100, 8)\n"
        "        self.head = nn.Linear(8 * 8, 4)\n\n"
        "    def forward(self, ids):\n"
        "        return self.head(self.embed(ids).flatten(1))\n\n\n"
        "class Attend(nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.attention = nn.MultiheadAttention(8, 2)\n\n"
        "    def forward(self, x):\n"
        "        out, _ = self.attention(x, x, x)\n"
        "        return out.reshape(8, -1)\n\n\n"
        "class Annotated(nn.Module):\n"
        "    def forward(self, x: \"Float[Tensor, 'batch seq 4']\"):\n"
        "        return x.view(x.shape[0], 8, 2, 2)\n")
    completed = fx_lsp("check", "--no-cache", "--mode", "export", "--output-format", "json",
                       "model.py", cwd=tmp_path)
    assert "Traceback" not in completed.stderr, completed.stderr[-2000:]
    found = {(d["line"], d["code"]): str(d["message"])
             for d in json.loads(completed.stdout)["diagnostics"]}
    assert set(found) == {(11, "FX407"), (21, "FX407"), (26, "FX407")}, found
    assert found[(11, "FX407")].startswith(
        "With the sequence dimension (dimension 1) of 'ids' dynamic")
    assert "dynamic_shapes={'ids': {0: Dim('batch_ids'), 1: 8}}" in found[(11, "FX407")]
    assert found[(21, "FX407")].startswith(
        "With the sequence dimension (dimension 0) of 'x' dynamic")
    assert "dynamic_shapes={'x': {0: 8, 1: Dim('batch_x')}}" in found[(21, "FX407")]
    assert "seq_x = 8" in found[(26, "FX407")]


class _Documented(nn.Module):
    def forward(self, x):
        """Frames of a signal.

        Args:
            x: features of the shape ``(batch, channels, timesteps)``.
        """
        return x.relu()


def test_the_sources_that_name_a_sequence_say_which_dimension_it_is() -> None:
    """A configured spec's, an annotation's and a documented shape's dimension named as a
    sequence; the batch is the one named so, else the first that is not the sequence. The
    spec's text and equality stay those of the tensor."""
    configured = parse_spec("int64[batch=4, seq=16]")
    assert (configured.batch_dim, configured.sequence_dim, str(configured)) == \
        (0, 1, "int64[4, 16]")
    assert configured == parse_spec("int64[4, 16]")
    first = parse_spec("float32[time=16, n=4, 8]")
    assert (first.batch_dim, first.sequence_dim) == (1, 0)
    assert parse_spec("float32[4, 16, 8]").sequence_dim is None

    def forward(x: object) -> None: ...
    forward.__annotations__["x"] = "Float[Tensor, 'b tokens 8']"  # jaxtyping's, as text
    (spec,) = from_annotations(forward).values()
    assert (spec.batch_dim, spec.sequence_dim) == (0, 1)
    found = documented_inputs(_Documented, _Documented(), "cpu", {}, 10.0, lambda _: False)
    assert isinstance(found, LayerInputs)
    assert found.specs["x"].sequence_dim == 2
