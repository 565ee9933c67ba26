// The notifications around the server's install: a probe that failed, the offer to install or
// update fx-lsp from the wheel in the vsix, and the install itself (a progress notification, pip's
// output in the FX Trace log). The decisions are in serverInstall.ts.
import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { log } from "./log";
import { canSelectInterpreter } from "./python";
import {
  BUNDLED_DIR,
  DISTRIBUTION,
  Offer,
  ProbeResult,
  ProcessOptions,
  bundledWheelName,
  offerPrompt,
  pipFailureMessage,
  pipInstallArgs,
  runPipInstall,
} from "./serverInstall";

const SELECT_INTERPRETER = "Select Interpreter";
const SHOW_LOG = "Show Log";

/** The wheel of the extension's own version in the vsix, if this build carries one. */
export function bundledWheel(extensionPath: string, version: string): string | undefined {
  const wheel = path.join(extensionPath, BUNDLED_DIR, bundledWheelName(version));
  return fs.existsSync(wheel) ? wheel : undefined;
}

async function answerCommonChoice(choice: string | undefined): Promise<void> {
  if (choice === SELECT_INTERPRETER) await vscode.commands.executeCommand("python.setInterpreter");
  else if (choice === SHOW_LOG) log().show();
}

function otherChoices(): string[] {
  return canSelectInterpreter() ? [SELECT_INTERPRETER, SHOW_LOG] : [SHOW_LOG];
}

/** The interpreter could not be asked at all: it is missing or fails to run. */
export async function reportProbeProblem(python: string, result: Extract<ProbeResult, { ok: false }>): Promise<void> {
  log().error(result.detail);
  const message =
    result.reason === "interpreter-missing"
      ? `FX Trace: the Python interpreter ${python} was not found. Set fxLsp.interpreter or select an interpreter.`
      : `FX Trace: ${python} could not look for the fx-lsp server (see the log).`;
  await answerCommonChoice(await vscode.window.showErrorMessage(message, ...otherChoices()));
}

/** Shows the offer; resolves true when the user clicked its install button. */
export async function showOffer(
  offer: Offer,
  python: string,
  extensionVersion: string,
  environment: { pip: boolean; wheelBundled: boolean },
): Promise<boolean> {
  const prompt = offerPrompt(offer, python, extensionVersion, environment);
  log().warn(prompt.message);
  const choices = prompt.installButton === undefined ? otherChoices() : [prompt.installButton, ...otherChoices()];
  const show = prompt.severity === "warning" ? vscode.window.showWarningMessage : vscode.window.showInformationMessage;
  const choice = await show(prompt.message, ...choices);
  if (choice !== undefined && choice === prompt.installButton) return true;
  await answerCommonChoice(choice);
  return false;
}

/**
 * `<python> -m pip install <wheel>` under a progress notification, pip's lines in the log. On a
 * failure, one message says what to do (no retry button: the same pip would fail the same way).
 */
export async function installWheel(python: string, wheel: string, version: string, options: ProcessOptions): Promise<boolean> {
  log().info(`Installing: ${python} ${pipInstallArgs(wheel).join(" ")}`);
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `FX Trace: installing ${DISTRIBUTION} ${version} into ${python}` },
    (progress) =>
      runPipInstall(python, wheel, options, (line) => {
        log().info(`pip: ${line}`);
        progress.report({ message: line.trim().slice(0, 120) });
      }),
  );
  if (result.ok) {
    log().info(`Installed ${DISTRIBUTION} ${version} into ${python}.`);
    return true;
  }
  const message = pipFailureMessage(result.failure, python, result.exitCode);
  log().error(`${message} (${result.detail})`);
  // Not awaited: the caller goes on (the restart queue must not wait for the user).
  void vscode.window.showErrorMessage(message, ...otherChoices()).then(answerCommonChoice);
  return false;
}
