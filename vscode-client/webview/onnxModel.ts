// The onnx mode's translated ONNX model, beside the exported program the graph view draws
// (`onnx` of the `fxLsp/graph` answer, docs/contracts.md): what the view says of it, as lines
// under the drawing's notes. Pure, unit-tested without a browser.

export interface OnnxNodeData {
  opType: string;
  name: string;
  domain: string;
  inputs: string[];
  outputs: string[];
}

export interface OnnxModelData {
  nodeCount: number;
  truncated: boolean;
  nodes: OnnxNodeData[];
}

/** An operator as ONNX names it: its domain before it where that is not the default one. */
function opName(node: OnnxNodeData): string {
  return node.domain === "" || node.domain === "ai.onnx" ? node.opType : `${node.domain}::${node.opType}`;
}

/** The model's size and its operators by count, most used first (its node list is on the page
 * `fx-lsp graph --mode onnx` writes: the view's messages sit above the drawing). None without
 * a model. */
export function onnxModelLines(model: OnnxModelData | null | undefined): string[] {
  if (model === null || model === undefined) return [];
  const counts = new Map<string, number>();
  for (const node of model.nodes) counts.set(opName(node), (counts.get(opName(node)) ?? 0) + 1);
  const operators = [...counts.entries()]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .map(([name, count]) => (count === 1 ? name : `${name} ×${count}`));
  const shown = model.truncated ? ` (operators of the first ${model.nodes.length})` : "";
  return [`ONNX model: ${model.nodeCount} nodes${shown}: ${operators.join(", ")}`];
}
