"""The onnx mode's ONNX model on ``fx-lsp graph``'s page, without torch: a verdict
carrying the first of the model's nodes goes through the result codec whole, and the page lists
them below the drawing, says how many were left out and keeps every name text. (The model
translated by a real worker: tests/fxcore/worker/capture/onnx/test_onnx_mode.py, slow.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from fx_lsp.cli import graph_html
from fxcore.model.results import GraphNode, ModuleResult, OnnxNode
from fxcore.protocol import result_codec


def verdict(path: Path, **onnx: object) -> ModuleResult:
    path.write_text("import torch\n\n\nclass Head(torch.nn.Module):\n    pass\n")
    return ModuleResult(path=str(path), line=4, column=7, end_line=4, end_column=11,
                        class_name="Head", qualified_name="models:Head", status="traceable",
                        mode="onnx", node_count=1,
                        graph=[GraphNode(name="x", op="placeholder", target="x")], **onnx)


def test_a_capped_onnx_model_goes_through_the_codec_and_onto_the_page(tmp_path: Path) -> None:
    sent = verdict(tmp_path / "models.py", onnx_node_count=3, onnx_graph=[
        OnnxNode(op_type="Gemm", name="node_</script>", inputs=["x", "", "fc.bias"],
                 outputs=["linear"]),
        OnnxNode(op_type="Fused", name="node_fused", domain="my.ops", inputs=["linear"],
                 outputs=["y"])])
    received = result_codec.decode_module_result(
        result_codec.loads(result_codec.dumps(sent)))
    assert received.onnx_graph == sent.onnx_graph and received.onnx_node_count == 3
    page = graph_html.page(received)
    section = page[page.index('<section id="onnx-model">'):page.index("</section>")]
    assert "the first 2 of its 3 nodes" in section
    assert "<td>Gemm</td><td>node_&lt;/script&gt;</td><td>x, , fc.bias</td>" in section
    assert "<td>my.ops::Fused</td>" in section
    assert "</script>" not in section


def test_a_wrongly_typed_onnx_node_is_refused(tmp_path: Path) -> None:
    data = result_codec.encode(verdict(tmp_path / "models.py", onnx_node_count=1, onnx_graph=[
        OnnxNode(op_type="Relu", name="node_relu", inputs=["x"], outputs=["y"])]))
    data["onnx_graph"][0]["inputs"] = "x"
    with pytest.raises(result_codec.InvalidResultData):
        result_codec.decode_module_result(data)


def test_no_onnx_model_no_section(tmp_path: Path) -> None:
    page = graph_html.page(verdict(tmp_path / "models.py"))
    assert '<section id="onnx-model">' not in page
    assert '"onnx": null' in page
