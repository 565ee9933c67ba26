// What the client sends the server in `initialize`: the resolved settings, plus the options that
// say how this client talks to the server rather than how fx-lsp checks.
import { ServerSettings } from "./settings";

export interface InitializationOptions extends ServerSettings {
  /**
   * False: vscode-languageclient would show pulled diagnostics beside the pushed ones (twice),
   * and would pull `workspace/diagnostic` (a trace of the whole workspace) on its own; the
   * server then declares no diagnostic provider and pushes only.
   */
  pullDiagnostics: false;
}

export function initializationOptions(settings: ServerSettings): InitializationOptions {
  return { ...settings, pullDiagnostics: false };
}
