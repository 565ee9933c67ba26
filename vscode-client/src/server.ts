// Starting the language server: `<interpreter> -m fx_lsp serve` over stdio, in the user's Python,
// after checking that `fx_lsp` is importable there (so a missing install is one clear message,
// not a crash loop). Both run with a safe import path: never in the workspace folder, whose files
// would otherwise shadow modules the server imports (and run in it, Restricted Mode included).
import { execFile } from "node:child_process";
import * as vscode from "vscode";
import {
  DidChangeConfigurationNotification,
  LanguageClient,
  LanguageClientOptions,
  RevealOutputChannelOn,
  ServerOptions,
  TransportKind,
} from "vscode-languageclient/node";
import { log } from "./log";
import { canSelectInterpreter } from "./python";
import { CONFIG_SECTION, ServerSettings } from "./settings";

export const CLIENT_ID = "fxLsp";
export const CLIENT_NAME = "FX Trace";
const SERVER_MODULE = "fx_lsp";
/** How often the server may crash before the client gives up restarting it (per 3 minutes). */
const MAX_CRASH_RESTARTS = 2;
const STOP_TIMEOUT_MS = 3000;

export type InstallCheck =
  | { ok: true }
  | { ok: false; reason: "interpreter-missing" | "not-installed" | "broken"; detail: string };

const FIND_SPEC_EXIT_CODE = 3;

/**
 * How every Python process of the extension is started. `-m` and `-c` put the working folder
 * first on `sys.path`: the working folder is `neutralFolder` (the extension's own folder, never
 * the workspace) and PYTHONSAFEPATH=1 leaves it off `sys.path` altogether on Python 3.11+.
 * The server does not depend on its working folder: it gets the workspace from `initialize`.
 */
export function safeProcessOptions(neutralFolder: string): { cwd: string; env: NodeJS.ProcessEnv } {
  return { cwd: neutralFolder, env: { ...process.env, PYTHONSAFEPATH: "1", PYTHONUNBUFFERED: "1" } };
}

/** Asks the interpreter whether it can import `fx_lsp` without importing it (that loads torch). */
export function checkServerInstalled(python: string, neutralFolder: string): Promise<InstallCheck> {
  const script = `import importlib.util, sys; sys.exit(0 if importlib.util.find_spec("${SERVER_MODULE}") else ${FIND_SPEC_EXIT_CODE})`;
  return new Promise((resolve) => {
    execFile(python, ["-c", script], { ...safeProcessOptions(neutralFolder), timeout: 30_000 }, (error, _stdout, stderr) => {
      if (error === null) {
        resolve({ ok: true });
      } else if ((error as NodeJS.ErrnoException).code === "ENOENT") {
        resolve({ ok: false, reason: "interpreter-missing", detail: `${python} was not found` });
      } else if (error.code === FIND_SPEC_EXIT_CODE) {
        resolve({ ok: false, reason: "not-installed", detail: `${SERVER_MODULE} is not importable by ${python}` });
      } else {
        resolve({ ok: false, reason: "broken", detail: `${python} failed: ${stderr.trim() || error.message}` });
      }
    });
  });
}

export function installCommand(python: string): string {
  const quoted = /[\s"']/.test(python) ? `"${python}"` : python;
  return `${quoted} -m pip install fx-lsp`;
}

/** One notification per failed check; its buttons install, copy the command or pick another Python. */
export async function reportInstallProblem(python: string, check: Exclude<InstallCheck, { ok: true }>): Promise<void> {
  log().error(check.detail);
  const install = "Install in Terminal";
  const copy = "Copy Install Command";
  const select = "Select Interpreter";
  const showLog = "Show Log";
  const choices = [showLog];
  let message: string;
  if (check.reason === "not-installed") {
    message = `FX Trace: the fx-lsp server is not installed in ${python}. Install it there with: ${installCommand(python)} (then run FX: Restart Server).`;
    choices.unshift(install, copy);
  } else if (check.reason === "interpreter-missing") {
    message = `FX Trace: the Python interpreter ${python} was not found. Set fxLsp.interpreter or select an interpreter.`;
  } else {
    message = `FX Trace: ${python} could not look for the fx-lsp server (see the log).`;
  }
  if (canSelectInterpreter()) choices.unshift(select);
  const choice = await vscode.window.showErrorMessage(message, ...choices);
  if (choice === install) {
    const terminal = vscode.window.createTerminal({ name: "Install fx-lsp" });
    terminal.show();
    terminal.sendText(installCommand(python));
  } else if (choice === copy) {
    await vscode.env.clipboard.writeText(installCommand(python));
  } else if (choice === select) {
    await vscode.commands.executeCommand("python.setInterpreter");
  } else if (choice === showLog) {
    log().show();
  }
}

export function createClient(python: string, neutralFolder: string, settings: () => ServerSettings): LanguageClient {
  const serverOptions: ServerOptions = {
    command: python,
    args: ["-m", SERVER_MODULE, "serve"],
    // vscode-languageclient appends `--stdio`, which the server accepts.
    transport: TransportKind.stdio,
    options: safeProcessOptions(neutralFolder),
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", language: "python" },
      { scheme: "untitled", language: "python" },
      // The Python cells of Jupyter notebooks: the client sends the notebooks themselves
      // (notebookDocument/*, as the server declares notebookDocumentSync), not each cell as a
      // text document, and asks for hovers, code lenses and quick fixes in the cells.
      { notebook: "jupyter-notebook", language: "python" },
    ],
    outputChannel: log(),
    traceOutputChannel: log(),
    revealOutputChannelOn: RevealOutputChannelOn.Never,
    initializationOptions: () => settings(),
    // A server that fails to initialize will fail again the same way: say so once, don't retry.
    initializationFailedHandler: (error: unknown) => {
      log().error(`The server failed to initialize: ${String(error)}`);
      return false;
    },
    connectionOptions: { maxRestartCount: MAX_CRASH_RESTARTS },
    middleware: {
      workspace: {
        // A server that pulls `workspace/configuration` gets the same resolved settings as the
        // pushed ones (trust included), not the raw configuration.
        configuration: (params, token, next) => {
          const wantsOurs = params.items.some((item) => item.section === CONFIG_SECTION);
          if (!wantsOurs) return next(params, token);
          return params.items.map((item) => (item.section === CONFIG_SECTION ? settings() : null));
        },
      },
    },
  };
  return new LanguageClient(CLIENT_ID, CLIENT_NAME, serverOptions, clientOptions);
}

export async function sendSettings(client: LanguageClient, settings: ServerSettings): Promise<void> {
  if (!client.isRunning()) return;
  log().info(`Sending settings: ${JSON.stringify(settings)}`);
  await client.sendNotification(DidChangeConfigurationNotification.type, { settings: { [CONFIG_SECTION]: settings } });
}

export async function stopClient(client: LanguageClient): Promise<void> {
  try {
    // dispose() stops the server (shutdown + exit) and unregisters what the client registered,
    // such as the server's executeCommand commands, so that a new client can register them again.
    await client.dispose(STOP_TIMEOUT_MS);
  } catch (error) {
    log().warn(`Stopping the server: ${String(error)}`);
  }
}
