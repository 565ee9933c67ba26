import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  ConfigurationReader,
  DEFAULT_SERVER_SETTINGS,
  chooseInterpreter,
  classifySettingsChange,
  expandInterpreterPath,
  interpreterSetting,
  resolveServerSettings,
} from "../src/settings";

/** A configuration as VS Code would give it: merged values, plus the user's own (global) ones. */
function configOf(values: Record<string, unknown>, globalValues: Record<string, unknown> = {}): ConfigurationReader {
  return {
    get: <T>(key: string) => values[key] as T | undefined,
    inspect: <T>(key: string) => ({ globalValue: globalValues[key] as T | undefined }),
  };
}

describe("resolveServerSettings", () => {
  it("gives the defaults when nothing is set", () => {
    const { value, problems } = resolveServerSettings(configOf({}), true);
    assert.deepEqual(value, { ...DEFAULT_SERVER_SETTINGS, trusted: true });
    assert.deepEqual(problems, []);
  });

  it("passes valid values through and carries the trust state", () => {
    const { value, problems } = resolveServerSettings(
      configOf({ run: "onType", timeout: 5.5, severity: "warning", showNotTraced: true, shapeHints: false, exportStrict: true, moduleMode: "eval" }),
      false,
    );
    assert.deepEqual(value, {
      run: "onType",
      timeout: 5.5,
      severity: "warning",
      showNotTraced: true,
      shapeHints: false,
      modes: ["fx"],
      exportStrict: true,
      moduleMode: "eval",
      trusted: false,
    });
    assert.deepEqual(problems, []);
  });

  it("replaces each invalid value by its default and reports it once", () => {
    const { value, problems } = resolveServerSettings(
      configOf({ run: "always", timeout: -1, severity: "fatal", showNotTraced: "yes", shapeHints: 1, exportStrict: "on", moduleMode: "inference" }),
      true,
    );
    assert.deepEqual(value, { ...DEFAULT_SERVER_SETTINGS, trusted: true });
    assert.equal(problems.length, 7);
    assert.match(problems.join("\n"), /fxLsp\.moduleMode: "inference"/);
    assert.match(problems.join("\n"), /fxLsp\.shapeHints: 1/);
    assert.match(problems.join("\n"), /fxLsp\.exportStrict: "on"/);
    assert.match(problems.join("\n"), /fxLsp\.run: "always"/);
    assert.match(problems.join("\n"), /fxLsp\.timeout: -1/);
    assert.match(problems.join("\n"), /fxLsp\.severity: "fatal"/);
    assert.match(problems.join("\n"), /fxLsp\.showNotTraced: "yes"/);
  });

  it("rejects a timeout that is not a finite number", () => {
    for (const timeout of [0, Number.NaN, Number.POSITIVE_INFINITY, "10"]) {
      const { value, problems } = resolveServerSettings(configOf({ timeout }), true);
      assert.equal(value.timeout, DEFAULT_SERVER_SETTINGS.timeout, String(timeout));
      assert.equal(problems.length, 1);
    }
  });
});

describe("interpreterSetting", () => {
  it("uses the merged value in a trusted workspace", () => {
    assert.equal(interpreterSetting(configOf({ interpreter: " /ws/.venv/bin/python " }, { interpreter: "/usr/bin/python3" }), true), "/ws/.venv/bin/python");
  });

  it("uses only the user's own value in Restricted Mode", () => {
    const config = configOf({ interpreter: "./evil.sh" }, { interpreter: "/usr/bin/python3" });
    assert.equal(interpreterSetting(config, false), "/usr/bin/python3");
    assert.equal(interpreterSetting(configOf({ interpreter: "./evil.sh" }), false), undefined);
  });

  it("treats an empty or non-string value as unset", () => {
    assert.equal(interpreterSetting(configOf({ interpreter: "" }), true), undefined);
    assert.equal(interpreterSetting(configOf({ interpreter: "   " }), true), undefined);
    assert.equal(interpreterSetting(configOf({ interpreter: ["python"] }), true), undefined);
  });
});

describe("expandInterpreterPath", () => {
  it("expands ${workspaceFolder}, ${userHome} and ~", () => {
    assert.equal(expandInterpreterPath("${workspaceFolder}/.venv/bin/python", "/ws", "/home/u"), "/ws/.venv/bin/python");
    assert.equal(expandInterpreterPath("${userHome}/py/bin/python", "/ws", "/home/u"), "/home/u/py/bin/python");
    assert.equal(expandInterpreterPath("~/py/bin/python", "/ws", "/home/u"), "/home/u/py/bin/python");
  });

  it("resolves a relative path from the workspace folder and leaves a bare command for PATH", () => {
    assert.equal(expandInterpreterPath(".venv/bin/python", "/ws", "/home/u"), "/ws/.venv/bin/python");
    assert.equal(expandInterpreterPath("python3.11", "/ws", "/home/u"), "python3.11");
    assert.equal(expandInterpreterPath("/opt/py/bin/python", "/ws", "/home/u"), "/opt/py/bin/python");
  });
});

describe("chooseInterpreter", () => {
  it("prefers the setting over the Python extension over python3", () => {
    assert.deepEqual(chooseInterpreter("/a/python", "/b/python", "/ws"), { command: "/a/python", source: "setting" });
    assert.deepEqual(chooseInterpreter(undefined, "/b/python", "/ws"), { command: "/b/python", source: "python-extension" });
    assert.deepEqual(chooseInterpreter(undefined, undefined, "/ws"), { command: "python3", source: "default" });
    assert.deepEqual(chooseInterpreter(undefined, "", "/ws"), { command: "python3", source: "default" });
  });
});

describe("classifySettingsChange", () => {
  const affecting = (...sections: string[]) => (section: string) => sections.includes(section);

  it("restarts for the interpreter, notifies for the server options, ignores the rest", () => {
    assert.equal(classifySettingsChange(affecting("fxLsp.interpreter")), "restart");
    assert.equal(classifySettingsChange(affecting("fxLsp.interpreter", "fxLsp.run")), "restart");
    for (const key of ["fxLsp.run", "fxLsp.timeout", "fxLsp.severity", "fxLsp.showNotTraced", "fxLsp.shapeHints", "fxLsp.exportStrict"]) {
      assert.equal(classifySettingsChange(affecting(key)), "notify", key);
    }
    assert.equal(classifySettingsChange(affecting("fxLsp.trace.server")), "none");
    assert.equal(classifySettingsChange(affecting("editor.fontSize")), "none");
  });
});
