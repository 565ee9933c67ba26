// Starting the language server: `<interpreter> -m fx_lsp serve` over stdio, in the user's Python,
// after serverInstall.ts has checked that `fx_lsp` is installed there (so a missing install is one
// clear offer, not a crash loop). Every Python process runs with a safe import path: never in the
// workspace folder, whose files would otherwise shadow modules the server imports (and run in it,
// Restricted Mode included).
import {
  DidChangeConfigurationNotification,
  LanguageClient,
  LanguageClientOptions,
  RevealOutputChannelOn,
  ServerOptions,
  TransportKind,
} from "vscode-languageclient/node";
import { initializationOptions } from "./initializationOptions";
import { log } from "./log";
import { SERVER_MODULE } from "./serverInstall";
import { CONFIG_SECTION, ServerSettings } from "./settings";

export const CLIENT_ID = "fxLsp";
export const CLIENT_NAME = "FX Trace";
/** How often the server may crash before the client gives up restarting it (per 3 minutes). */
const MAX_CRASH_RESTARTS = 2;
const STOP_TIMEOUT_MS = 3000;

/**
 * How every Python process of the extension is started. `-m` and `-c` put the working folder
 * first on `sys.path`: the working folder is `neutralFolder` (the extension's own folder, never
 * the workspace) and PYTHONSAFEPATH=1 leaves it off `sys.path` altogether on Python 3.11+.
 * The server does not depend on its working folder: it gets the workspace from `initialize`.
 */
export function safeProcessOptions(neutralFolder: string): { cwd: string; env: NodeJS.ProcessEnv } {
  return { cwd: neutralFolder, env: { ...process.env, PYTHONSAFEPATH: "1", PYTHONUNBUFFERED: "1" } };
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
    // Pushed diagnostics only (initializationOptions.ts says why).
    initializationOptions: () => initializationOptions(settings()),
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
