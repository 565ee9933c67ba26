import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { graphTitle, modeItems, modesText, pickedModes } from "../src/captureModes";

describe("capture modes pick", () => {
  it("names a graph view's mode in its title unless it is plain fx", () => {
    assert.equal(graphTitle("Net", "export"), "Graph: Net (export)");
    assert.equal(graphTitle("Net", "fx"), "Graph: Net");
    assert.equal(graphTitle("Net", undefined), "Graph: Net");
  });

  it("shows the active modes in the status text", () => {
    assert.equal(modesText(["fx", "export"]), "FX: fx+export");
    assert.equal(modesText(["fx"]), "FX: fx");
  });

  it("picks the current setting's modes among the built-in ones and keeps extra ones", () => {
    const items = modeItems(["export", "plain"]);
    assert.deepEqual(items.map((item) => [item.label, item.picked]), [
      ["fx", false], ["export", true], ["compile", false], ["onnx", false], ["plain", true],
    ]);
  });

  it("writes the picked modes in the items' order, and nothing when none is picked", () => {
    const items = modeItems(["fx"]);
    assert.deepEqual(pickedModes([{ label: "compile" }, { label: "fx" }], items), ["fx", "compile"]);
    assert.equal(pickedModes([], items), undefined);
  });
});
