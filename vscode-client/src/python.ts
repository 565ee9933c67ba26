// The interpreter that runs the server: the `fxLsp.interpreter` setting, else the active
// environment of the Python extension (ms-python.python) for the resource, else `python3`.
import * as vscode from "vscode";
import { log } from "./log";
import { CONFIG_SECTION, InterpreterChoice, chooseInterpreter, interpreterSetting } from "./settings";

const PYTHON_EXTENSION_ID = "ms-python.python";

// The few members of the Python extension's public API used here (its `environments` API).
interface EnvironmentPath {
  id: string;
  path: string;
}
interface ResolvedEnvironment {
  executable: { uri: vscode.Uri | undefined };
}
interface PythonEnvironmentsApi {
  getActiveEnvironmentPath(resource?: vscode.Uri | vscode.WorkspaceFolder): EnvironmentPath;
  resolveEnvironment(environment: EnvironmentPath | string): Promise<ResolvedEnvironment | undefined>;
  readonly onDidChangeActiveEnvironmentPath: vscode.Event<unknown>;
}
interface PythonExtensionApi {
  environments: PythonEnvironmentsApi;
}

let pythonApi: PythonExtensionApi | undefined;

/** Activates the Python extension if it is installed; the server works without it. */
export async function initializePython(
  disposables: vscode.Disposable[],
  onInterpreterChanged: () => void,
): Promise<void> {
  const extension = vscode.extensions.getExtension<PythonExtensionApi>(PYTHON_EXTENSION_ID);
  if (extension === undefined) {
    log().info("The Python extension is not installed: the interpreter comes from fxLsp.interpreter or python3 on PATH.");
    return;
  }
  try {
    const api = extension.isActive ? extension.exports : await extension.activate();
    if (api?.environments === undefined) {
      log().warn("The Python extension does not offer its environments API; it is not used.");
      return;
    }
    pythonApi = api;
    disposables.push(
      api.environments.onDidChangeActiveEnvironmentPath(() => {
        log().info("The Python extension's active environment changed.");
        onInterpreterChanged();
      }),
    );
  } catch (error) {
    log().error(`The Python extension could not be activated: ${String(error)}`);
  }
}

async function pythonExtensionExecutable(folder: vscode.WorkspaceFolder | undefined): Promise<string | undefined> {
  if (pythonApi === undefined) return undefined;
  try {
    const active = pythonApi.environments.getActiveEnvironmentPath(folder?.uri);
    const resolved = await pythonApi.environments.resolveEnvironment(active);
    return resolved?.executable.uri?.fsPath;
  } catch (error) {
    log().warn(`The Python extension could not resolve the active environment: ${String(error)}`);
    return undefined;
  }
}

/** The folder whose interpreter runs the one server of this window: the first workspace folder. */
export function serverWorkspaceFolder(): vscode.WorkspaceFolder | undefined {
  return vscode.workspace.workspaceFolders?.[0];
}

export async function resolveInterpreter(): Promise<InterpreterChoice> {
  const folder = serverWorkspaceFolder();
  const config = vscode.workspace.getConfiguration(CONFIG_SECTION, folder?.uri);
  const setting = interpreterSetting(config, vscode.workspace.isTrusted);
  const fromExtension = setting === undefined ? await pythonExtensionExecutable(folder) : undefined;
  return chooseInterpreter(setting, fromExtension, folder?.uri.fsPath);
}

/** Lets the user pick an environment through the Python extension, if it is there. */
export function canSelectInterpreter(): boolean {
  return pythonApi !== undefined;
}
