// The modes status item for Python files (ruff-vscode style): it shows the active capture
// modes, and its link (or "FX: Select Capture Modes") writes `fxLsp.modes` from a quick pick;
// the settings change then reaches the server, which re-checks the open documents.
import * as vscode from "vscode";
import { modeItems, modesText, pickedModes } from "./captureModes";
import { CONFIG_SECTION } from "./settings";

export const SELECT_MODES_COMMAND = "fxLsp.selectModes";

function configuredModes(): string[] {
  return vscode.workspace.getConfiguration(CONFIG_SECTION).get<string[]>("modes") ?? ["fx"];
}

export class ModesStatusItem implements vscode.Disposable {
  private readonly item: vscode.LanguageStatusItem;
  private readonly listener: vscode.Disposable;

  constructor() {
    this.item = vscode.languages.createLanguageStatusItem("fxLsp.modes", { language: "python" });
    this.item.name = "FX Capture Modes";
    this.item.command = { title: "Select Modes", command: SELECT_MODES_COMMAND };
    this.refresh();
    this.listener = vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration(`${CONFIG_SECTION}.modes`)) this.refresh();
    });
  }

  private refresh(): void {
    this.item.text = modesText(configuredModes());
  }

  dispose(): void {
    this.listener.dispose();
    this.item.dispose();
  }
}

/** Asks for the modes and writes them to the workspace's `fxLsp.modes`. */
export async function selectModes(): Promise<void> {
  const items = modeItems(configuredModes());
  const picked = await vscode.window.showQuickPick(items, {
    canPickMany: true,
    title: "FX: capture modes each class is checked with",
  });
  const modes = picked === undefined ? undefined : pickedModes(picked, items);
  if (modes === undefined) return;
  await vscode.workspace.getConfiguration(CONFIG_SECTION).update("modes", modes, vscode.ConfigurationTarget.Workspace);
}
