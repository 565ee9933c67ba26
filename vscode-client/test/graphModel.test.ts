import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  EXPAND_ALL_UP_TO,
  firstBoxes,
  GraphData,
  GraphNodeData,
  initialExpansion,
  itemsFor,
  keptExpansion,
  locationText,
  nodesAtLine,
  revealing,
  searchNodes,
  visibleGraph,
} from "../webview/graphModel";

function node(name: string, inputs: string[], scope: string[] = [], line: number | null = null): GraphNodeData {
  const location = line === null ? null : { uri: "file:///m.py", range: { start: { line, character: 4 }, end: { line, character: 9 } } };
  return { name, op: "call_function", target: `t.${name}`, inputs, shape: `float32[${name.length}]`, scope, location };
}

/** x -> layers.0 (attn inside) -> layers.1 -> head -> output. */
function decoder(): GraphData {
  return {
    className: "Decoder",
    qualifiedName: "m:Decoder",
    status: "traceable",
    location: { uri: "file:///m.py", range: { start: { line: 0, character: 6 }, end: { line: 0, character: 13 } } },
    inputs: null,
    inputsFrom: null,
    outputShape: null,
    notes: [],
    nodes: [
      node("x", []),
      node("norm", ["x"], ["layers.0"], 10),
      node("q", ["norm"], ["layers.0", "layers.0.attn"], 20),
      node("add", ["q", "x"], ["layers.0"], 11),
      node("norm_1", ["add"], ["layers.1"], 10),
      node("add_1", ["norm_1", "add"], ["layers.1"], 11),
      node("head", ["add_1"], [], 30),
      node("output", ["head"]),
    ],
    scopes: { "layers.0": "Block", "layers.0.attn": "Attention", "layers.1": "Block" },
    failures: [{ code: "FX001", severity: "error", message: "m", location: { uri: "file:///m.py", range: { start: { line: 20, character: 0 }, end: { line: 20, character: 1 } } }, nodes: ["q"] }],
  };
}

describe("visibleGraph", () => {
  it("draws each collapsed submodule as one box, with edges between boxes", () => {
    const graph = visibleGraph(decoder(), new Set());
    assert.deepEqual(graph.items.map((item) => item.id), ["node:x", "group:layers.0", "group:layers.1", "node:head", "node:output"]);
    assert.deepEqual(graph.edges, [
      ["node:x", "group:layers.0"],
      ["group:layers.0", "group:layers.1"],
      ["group:layers.1", "node:head"],
      ["node:head", "node:output"],
    ]);
    const layer = graph.items[1];
    assert.deepEqual(layer.members, ["norm", "q", "add"]);
    assert.equal(layer.detail, "Block · 3 nodes");
    assert.equal(layer.shape, "float32[3]"); // the last node made in it
    assert.equal(layer.failed, true); // q failed inside
    assert.deepEqual(graph.clusters, []);
  });

  it("draws an expanded submodule as a frame around its items", () => {
    const graph = visibleGraph(decoder(), new Set(["layers.0"]));
    const ids = graph.items.map((item) => item.id);
    assert.deepEqual(ids, ["node:x", "node:norm", "group:layers.0.attn", "node:add", "group:layers.1", "node:head", "node:output"]);
    assert.equal(graph.items[2].parent, "cluster:layers.0");
    assert.equal(graph.items[1].parent, "cluster:layers.0");
    assert.deepEqual(graph.clusters, [{ id: "cluster:layers.0", scope: "layers.0", label: "layers.0 (Block)", parent: undefined }]);
    assert.ok(graph.edges.some(([from, to]) => from === "node:x" && to === "node:add"));
  });

  it("nests frames and leaves no edge from a box to itself", () => {
    const graph = visibleGraph(decoder(), new Set(["layers.0", "layers.0.attn"]));
    const q = graph.items.find((item) => item.id === "node:q")!;
    assert.equal(q.parent, "cluster:layers.0.attn");
    assert.equal(graph.clusters.find((cluster) => cluster.scope === "layers.0.attn")!.parent, "cluster:layers.0");
    assert.ok(graph.edges.every(([from, to]) => from !== to));
  });
});

describe("expansion, search and lines", () => {
  it("opens small graphs expanded and large ones collapsed", () => {
    assert.deepEqual([...initialExpansion(decoder())], ["layers.0", "layers.0.attn", "layers.1"]);
    const large = decoder();
    large.nodes = Array.from({ length: EXPAND_ALL_UP_TO + 1 }, (_, index) => node(`n${index}`, [], ["layers.0"]));
    assert.equal(initialExpansion(large).size, 0);
  });

  it("finds nodes by name, opens their submodules, and maps them to boxes", () => {
    const data = decoder();
    assert.deepEqual(searchNodes(data, "NORM"), ["norm", "norm_1"]);
    assert.deepEqual(searchNodes(data, "  "), []);
    const opened = revealing(data, new Set(), ["q"]);
    assert.deepEqual([...opened].sort(), ["layers.0", "layers.0.attn"]);
    assert.deepEqual(itemsFor(visibleGraph(data, new Set()), ["q", "head"]), ["group:layers.0", "node:head"]);
  });

  it("gives the nodes of a line, and keeps only expanded submodules that still exist", () => {
    const data = decoder();
    assert.deepEqual(nodesAtLine(data, "file:///m.py", 10), ["norm", "norm_1"]);
    assert.deepEqual(nodesAtLine(data, "file:///other.py", 10), []);
    assert.deepEqual([...keptExpansion(data, new Set(["layers.1", "layers.7"]))], ["layers.1"]);
    assert.equal(locationText({ uri: "file:///w/my%20models/m.py", range: { start: { line: 4, character: 0 }, end: { line: 4, character: 3 } } }), "/w/my models/m.py:5");
    // A notebook cell's URI names no file: the server's label names the cell.
    const cell = { uri: "vscode-notebook-cell:/w/nb.ipynb#W2sZmlsZQ%3D%3D", range: { start: { line: 1, character: 4 }, end: { line: 1, character: 9 } } };
    assert.equal(locationText({ ...cell, label: "nb.ipynb:cell 3:2" }), "nb.ipynb:cell 3:2");
  });
});

describe("firstBoxes", () => {
  it("keeps the first boxes in graph order and the edges and frames among them", () => {
    const graph = visibleGraph(decoder(), new Set(["layers.0", "layers.0.attn"]));
    const first = firstBoxes(graph, 3);
    assert.deepEqual(first.items.map((item) => item.id), ["node:x", "node:norm", "node:q"]);
    assert.deepEqual(first.edges, [["node:x", "node:norm"], ["node:norm", "node:q"]]);
    assert.deepEqual(first.clusters.map((cluster) => cluster.id), ["cluster:layers.0", "cluster:layers.0.attn"]);
    assert.equal(firstBoxes(graph, 100), graph);
  });

  it("keeps every frame around a kept box, however deep it sits", () => {
    const deep: GraphData = {
      ...decoder(),
      nodes: [node("x", []), node("inner", ["x"], ["a", "a.b", "a.b.c"], 5), node("after", ["inner"], [], 6)],
      scopes: {},
      failures: [],
    };
    const graph = visibleGraph(deep, new Set(["a", "a.b", "a.b.c"]));
    assert.deepEqual(firstBoxes(graph, 2).clusters.map((cluster) => cluster.id), ["cluster:a", "cluster:a.b", "cluster:a.b.c"]);
  });
});
