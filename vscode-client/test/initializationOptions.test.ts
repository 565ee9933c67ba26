import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";
import { initializationOptions } from "../src/initializationOptions";
import { DEFAULT_SERVER_SETTINGS, ServerSettings } from "../src/settings";

/** The repository root, from vscode-client/out/test/. */
const REPOSITORY_ROOT = path.resolve(__dirname, "..", "..", "..");

/** The name of the initialization option the server reads to leave pull diagnostics out. */
function serverPullOption(): string {
  const source = readFileSync(path.join(REPOSITORY_ROOT, "fx_lsp", "features", "pull_diagnostics.py"), "utf8");
  const found = /^OPTION = "([^"]+)"$/m.exec(source);
  assert.ok(found, "fx_lsp/features/pull_diagnostics.py defines no OPTION");
  return found[1];
}

describe("initializationOptions", () => {
  const settings: ServerSettings = { ...DEFAULT_SERVER_SETTINGS, trusted: true, modes: ["fx", "onnx"] };

  it("sends the resolved settings as they are", () => {
    const { pullDiagnostics: _, ...rest } = initializationOptions(settings);
    assert.deepEqual(rest, settings);
  });

  it("turns pull diagnostics off under the option name the server reads", () => {
    const options = initializationOptions(settings) as unknown as Record<string, unknown>;
    assert.equal(options[serverPullOption()], false);
  });
});
