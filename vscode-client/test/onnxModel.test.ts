import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { OnnxNodeData, onnxModelLines } from "../webview/onnxModel";

function node(opType: string, domain = ""): OnnxNodeData {
  return { opType, name: `n_${opType}`, domain, inputs: ["x"], outputs: ["y"] };
}

describe("onnxModelLines", () => {
  it("says nothing without a model (another mode, or no translation)", () => {
    assert.deepEqual(onnxModelLines(null), []);
    assert.deepEqual(onnxModelLines(undefined), []);
  });

  it("gives the node count and the operators by count, another domain named", () => {
    const nodes = [node("Relu"), node("Gemm"), node("Relu"), node("Fused", "my.ops")];
    assert.deepEqual(onnxModelLines({ nodeCount: 4, truncated: false, nodes }), [
      "ONNX model: 4 nodes: Relu ×2, Gemm, my.ops::Fused",
    ]);
  });

  it("says when the operators are those of the model's first nodes only", () => {
    assert.deepEqual(onnxModelLines({ nodeCount: 3000, truncated: true, nodes: [node("Add")] }), [
      "ONNX model: 3000 nodes (operators of the first 1): Add",
    ]);
  });
});
