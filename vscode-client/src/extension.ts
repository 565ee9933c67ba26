// Entry point: wires the log, the status item, the commands and the server's lifecycle.
import * as vscode from "vscode";
import { LanguageClient, State } from "vscode-languageclient/node";
import { GENERATED_CODE_SCHEME, GeneratedCodeProvider, SHOW_GENERATED_CODE_COMMAND, TracedParams } from "./generatedCode";
import { GraphPanels, SHOW_GRAPH_COMMAND } from "./graphPanel";
import { createLog, log } from "./log";
import { initializePython, resolveInterpreter, serverWorkspaceFolder } from "./python";
import { ModesStatusItem, SELECT_MODES_COMMAND, selectModes } from "./modesStatus";
import { RestartQueue } from "./restartQueue";
import { checkServerInstalled, createClient, reportInstallProblem, sendSettings, stopClient } from "./server";
import { CONFIG_SECTION, ServerSettings, classifySettingsChange, resolveServerSettings } from "./settings";
import { ServerStatus, StatusItem } from "./status";
import { TRACE_WORKSPACE_COMMAND, traceWorkspace } from "./traceWorkspace";

let client: LanguageClient | undefined;
/** The interpreter the running server was started with, to tell whether a change needs a restart. */
let clientInterpreter: string | undefined;

function currentSettings(): ServerSettings {
  const config = vscode.workspace.getConfiguration(CONFIG_SECTION, serverWorkspaceFolder()?.uri);
  const { value, problems } = resolveServerSettings(config, vscode.workspace.isTrusted);
  for (const problem of problems) log().warn(problem);
  return value;
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  context.subscriptions.push(createLog());
  const status = new StatusItem();
  const generatedCode = new GeneratedCodeProvider(() => client);
  const graphs = new GraphPanels(context.extensionUri, () => client);
  context.subscriptions.push(status, new ModesStatusItem(), generatedCode, graphs);

  const restartServer = async (): Promise<void> => {
    status.showStarting();
    if (client !== undefined) {
      log().info("Stopping the server.");
      const stopping = client;
      client = undefined;
      clientInterpreter = undefined;
      await stopClient(stopping);
    }
    const interpreter = await resolveInterpreter();
    // Never the workspace folder: see safeProcessOptions.
    const neutralFolder = context.extensionPath;
    log().info(`Interpreter: ${interpreter.command} (from ${interpreter.source}); workspace trusted: ${vscode.workspace.isTrusted}`);
    const check = await checkServerInstalled(interpreter.command, neutralFolder);
    if (!check.ok) {
      status.showStopped(check.detail);
      void reportInstallProblem(interpreter.command, check);
      return;
    }
    const starting = createClient(interpreter.command, neutralFolder, currentSettings);
    starting.onNotification("fxLsp/status", (params: ServerStatus) => status.show(params));
    starting.onNotification("fxLsp/traced", (params: TracedParams) => {
      generatedCode.onTraced(params);
      graphs.onTraced(params);
    });
    starting.onDidChangeState((event) => {
      // The client's own restarts after a crash pass through here too.
      if (client !== starting) return;
      if (event.newState === State.Stopped) status.showStopped("the server stopped: see the log");
      if (event.newState === State.Running) status.show({ state: "idle", pending: 0 });
    });
    client = starting;
    clientInterpreter = interpreter.command;
    log().info(`Starting: PYTHONSAFEPATH=1 ${interpreter.command} -m fx_lsp serve (in ${neutralFolder})`);
    try {
      await starting.start();
      log().info("The server is running.");
    } catch (error) {
      log().error(`The server did not start: ${String(error)}`);
      status.showStopped("the server did not start: see the log");
    }
  };
  const restarts = new RestartQueue(restartServer, (error) => log().error(`Restart failed: ${String(error)}`));
  const requestRestart = (why: string): Promise<void> => {
    log().info(`Restart requested: ${why}`);
    return restarts.request();
  };
  const restartIfInterpreterChanged = async (why: string): Promise<boolean> => {
    const interpreter = await resolveInterpreter();
    if (client !== undefined && interpreter.command === clientInterpreter) return false;
    void requestRestart(why);
    return true;
  };

  context.subscriptions.push(
    vscode.workspace.registerTextDocumentContentProvider(GENERATED_CODE_SCHEME, generatedCode),
    vscode.commands.registerCommand("fxLsp.restart", () => requestRestart("FX: Restart Server")),
    vscode.commands.registerCommand("fxLsp.showLog", () => log().show()),
    vscode.commands.registerCommand(SELECT_MODES_COMMAND, selectModes),
    vscode.commands.registerCommand(SHOW_GENERATED_CODE_COMMAND, (uri?: string | vscode.Uri, className?: string) =>
      generatedCode.show(uri, className),
    ),
    vscode.commands.registerCommand(SHOW_GRAPH_COMMAND, (uri?: string | vscode.Uri, className?: string) => graphs.show(uri, className)),
    vscode.commands.registerCommand(TRACE_WORKSPACE_COMMAND, () => traceWorkspace(client)),
    vscode.workspace.onDidChangeConfiguration((event) => {
      const change = classifySettingsChange((section) => event.affectsConfiguration(section));
      if (change === "restart") void restartIfInterpreterChanged("fxLsp.interpreter changed");
      else if (change === "notify" && client !== undefined) void sendSettings(client, currentSettings());
    }),
    vscode.workspace.onDidGrantWorkspaceTrust(async () => {
      // Trust makes the workspace's own fxLsp.interpreter count: a different interpreter needs a
      // new process (started trusted); otherwise the running server just starts tracing.
      if (await restartIfInterpreterChanged("workspace trusted with another interpreter")) return;
      if (client !== undefined) {
        log().info("Workspace trusted: tracing starts.");
        await sendSettings(client, currentSettings());
      }
    }),
  );

  await initializePython(context.subscriptions, () => void restartIfInterpreterChanged("the Python extension's interpreter changed"));
  // Not awaited: activation (and the commands) must not wait for the server's first start.
  void requestRestart("activation");
}

export async function deactivate(): Promise<void> {
  if (client !== undefined) {
    const stopping = client;
    client = undefined;
    await stopClient(stopping);
  }
}
