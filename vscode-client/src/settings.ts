// Settings of the extension, resolved into the typed options the server understands.
// This module imports nothing from `vscode` at run time so its logic is unit-tested in plain node.
import * as os from "node:os";
import * as path from "node:path";

export const CONFIG_SECTION = "fxLsp";

export type RunMode = "onSave" | "onType";
export type Severity = "error" | "warning" | "information" | "hint";
export type ModuleMode = "auto" | "train" | "eval";

const RUN_MODES: readonly RunMode[] = ["onSave", "onType"];
const SEVERITIES: readonly Severity[] = ["error", "warning", "information", "hint"];
const MODULE_MODES: readonly ModuleMode[] = ["auto", "train", "eval"];

/** What the server receives as `initializationOptions` and as `settings.fxLsp` on change. */
export interface ServerSettings {
  run: RunMode;
  timeout: number;
  severity: Severity;
  showNotTraced: boolean;
  /** Inlay hints with the shape each line of `forward` produces. */
  shapeHints: boolean;
  /** Capture modes, each giving its own verdict per class (the server checks the names). */
  modes: string[];
  /** The export mode also exports with `strict=True` (FX405). */
  exportStrict: boolean;
  /** The `nn.Module` mode export and compile judge a class in. */
  moduleMode: ModuleMode;
  /** False in a Restricted Mode window: the server then imports no user code. */
  trusted: boolean;
}

export const DEFAULT_SERVER_SETTINGS: Omit<ServerSettings, "trusted"> = {
  run: "onSave",
  timeout: 20,
  severity: "error",
  showNotTraced: false,
  shapeHints: true,
  modes: ["fx"],
  exportStrict: false,
  moduleMode: "auto",
};

/** The part of `vscode.WorkspaceConfiguration` this module reads (structurally compatible). */
export interface ConfigurationReader {
  get<T>(key: string): T | undefined;
  inspect<T>(key: string): { globalValue?: T; defaultValue?: T } | undefined;
}

/** An invalid value falls back to its default and is reported once in `problems`. */
export interface Resolved<T> {
  value: T;
  problems: string[];
}

function oneOf<T extends string>(
  key: string,
  raw: unknown,
  allowed: readonly T[],
  fallback: T,
  problems: string[],
): T {
  if (raw === undefined) return fallback;
  if (typeof raw === "string" && (allowed as readonly string[]).includes(raw)) return raw as T;
  problems.push(`${CONFIG_SECTION}.${key}: ${JSON.stringify(raw)} is not one of ${allowed.join(", ")}; using "${fallback}".`);
  return fallback;
}

function flag(config: ConfigurationReader, key: string, fallback: boolean, problems: string[]): boolean {
  const raw = config.get<unknown>(key);
  if (raw === undefined) return fallback;
  if (typeof raw === "boolean") return raw;
  problems.push(`${CONFIG_SECTION}.${key}: ${JSON.stringify(raw)} is not true or false; using ${fallback}.`);
  return fallback;
}

export function resolveServerSettings(config: ConfigurationReader, trusted: boolean): Resolved<ServerSettings> {
  const problems: string[] = [];
  const defaults = DEFAULT_SERVER_SETTINGS;

  let timeout = defaults.timeout;
  const rawTimeout = config.get<unknown>("timeout");
  if (rawTimeout !== undefined) {
    if (typeof rawTimeout === "number" && Number.isFinite(rawTimeout) && rawTimeout > 0) {
      timeout = rawTimeout;
    } else {
      problems.push(`${CONFIG_SECTION}.timeout: ${JSON.stringify(rawTimeout)} is not a positive number of seconds; using ${defaults.timeout}.`);
    }
  }

  const showNotTraced = flag(config, "showNotTraced", defaults.showNotTraced, problems);
  const shapeHints = flag(config, "shapeHints", defaults.shapeHints, problems);
  const exportStrict = flag(config, "exportStrict", defaults.exportStrict, problems);

  let modes = defaults.modes;
  const rawModes = config.get<unknown>("modes");
  if (rawModes !== undefined) {
    if (Array.isArray(rawModes) && rawModes.length > 0 && rawModes.every((mode) => typeof mode === "string" && mode !== "")) {
      modes = rawModes as string[];
    } else {
      problems.push(`${CONFIG_SECTION}.modes: ${JSON.stringify(rawModes)} is not a list of capture modes such as ["fx", "export"]; using ${JSON.stringify(defaults.modes)}.`);
    }
  }

  return {
    value: {
      run: oneOf("run", config.get<unknown>("run"), RUN_MODES, defaults.run, problems),
      timeout,
      severity: oneOf("severity", config.get<unknown>("severity"), SEVERITIES, defaults.severity, problems),
      showNotTraced,
      shapeHints,
      modes,
      exportStrict,
      moduleMode: oneOf("moduleMode", config.get<unknown>("moduleMode"), MODULE_MODES, defaults.moduleMode, problems),
      trusted,
    },
    problems,
  };
}

/**
 * The `fxLsp.interpreter` value in force. In Restricted Mode only the user's own (global) value
 * counts: a workspace must not be able to name the program the extension runs.
 */
export function interpreterSetting(config: ConfigurationReader, trusted: boolean): string | undefined {
  const raw = trusted ? config.get<unknown>("interpreter") : config.inspect<unknown>("interpreter")?.globalValue;
  if (typeof raw !== "string" || raw.trim() === "") return undefined;
  return raw.trim();
}

/** Expands `${workspaceFolder}`, `${userHome}` and a leading `~`; relative paths are taken from the folder. */
export function expandInterpreterPath(value: string, workspaceFolder: string | undefined, homeDir: string = os.homedir()): string {
  let expanded = value.replace(/\$\{userHome\}/g, homeDir);
  if (workspaceFolder !== undefined) expanded = expanded.replace(/\$\{workspaceFolder\}/g, workspaceFolder);
  if (expanded === "~" || expanded.startsWith("~/")) expanded = homeDir + expanded.slice(1);
  // A bare command name ("python3.11") is looked up on PATH by the OS, so it stays as it is.
  const looksLikePath = expanded.includes("/") || expanded.includes("\\");
  if (looksLikePath && !path.isAbsolute(expanded) && workspaceFolder !== undefined) {
    expanded = path.join(workspaceFolder, expanded);
  }
  return expanded;
}

export type InterpreterSource = "setting" | "python-extension" | "default";

export interface InterpreterChoice {
  command: string;
  source: InterpreterSource;
}

export const DEFAULT_INTERPRETER = "python3";

/** The setting overrides the Python extension's active environment, which overrides `python3`. */
export function chooseInterpreter(
  setting: string | undefined,
  pythonExtensionExecutable: string | undefined,
  workspaceFolder: string | undefined,
  homeDir?: string,
): InterpreterChoice {
  if (setting !== undefined) return { command: expandInterpreterPath(setting, workspaceFolder, homeDir), source: "setting" };
  if (pythonExtensionExecutable !== undefined && pythonExtensionExecutable !== "") {
    return { command: pythonExtensionExecutable, source: "python-extension" };
  }
  return { command: DEFAULT_INTERPRETER, source: "default" };
}

/**
 * What a configuration change asks of the client: a new server process (the interpreter changed),
 * only a `workspace/didChangeConfiguration` (an option the running server applies live), or nothing.
 * `fxLsp.trace.server` is applied by vscode-languageclient itself.
 */
export type SettingsChange = "restart" | "notify" | "none";

export function classifySettingsChange(affects: (section: string) => boolean): SettingsChange {
  if (affects(`${CONFIG_SECTION}.interpreter`)) return "restart";
  for (const key of Object.keys(DEFAULT_SERVER_SETTINGS)) {
    if (affects(`${CONFIG_SECTION}.${key}`)) return "notify";
  }
  return "none";
}
