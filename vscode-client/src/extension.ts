// Entry point: wires the log, the status item, the commands and the server's lifecycle.
import * as vscode from "vscode";
import { LanguageClient, State } from "vscode-languageclient/node";
import { GENERATED_CODE_SCHEME, GeneratedCodeProvider, SHOW_GENERATED_CODE_COMMAND, TracedParams } from "./generatedCode";
import { GraphPanels, SHOW_GRAPH_COMMAND } from "./graphPanel";
import { createLog, log } from "./log";
import { initializePython, resolveInterpreter, serverWorkspaceFolder } from "./python";
import { ModesStatusItem, SELECT_MODES_COMMAND, selectModes } from "./modesStatus";
import { RestartQueue } from "./restartQueue";
import { bundledWheel, installWheel, reportProbeProblem, showOffer } from "./installer";
import { createClient, safeProcessOptions, sendSettings, stopClient } from "./server";
import { DISTRIBUTION, InstallOffers, Offer, planServerStart, probeInterpreter, serverVersionDiffers } from "./serverInstall";
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

  // The server must be the version of the extension: its wheel is in the vsix (scripts/wheel.mjs).
  const extensionVersion = String(context.extension.packageJSON.version);
  const offers = new InstallOffers();
  /** The interpreter whose install offer was clicked: the next restart installs into it. */
  let installRequest: string | undefined;
  // Assigned below: an accepted offer requests a restart, which does the install.
  let requestRestart: (why: string) => Promise<void>;

  const offerInstall = (python: string, shownAs: string, offer: Offer, pip: boolean): void => {
    if (!offers.shouldOffer(python)) {
      log().info(`No new offer to install ${DISTRIBUTION} into ${python} (one was made already).`);
      return;
    }
    offers.shown(python, offer);
    const wheelBundled = bundledWheel(context.extensionPath, extensionVersion) !== undefined;
    void showOffer(offer, shownAs, extensionVersion, { pip, wheelBundled }).then((clicked) => {
      offers.closed(python);
      if (!clicked) return;
      installRequest = python;
      void requestRestart(`install ${DISTRIBUTION} ${extensionVersion} into ${python}`);
    });
  };

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
    const processOptions = safeProcessOptions(neutralFolder);
    log().info(`Interpreter: ${interpreter.command} (from ${interpreter.source}); workspace trusted: ${vscode.workspace.isTrusted}`);
    if (installRequest !== undefined) {
      const requested = installRequest;
      installRequest = undefined;
      const wheel = bundledWheel(context.extensionPath, extensionVersion);
      if (requested !== interpreter.command) {
        // Only ever into the interpreter the user was asked about, and that is still the chosen one.
        log().warn(`Not installing into ${requested}: the interpreter is now ${interpreter.command}.`);
      } else if (wheel !== undefined) {
        offers.installAttempted(requested);
        await installWheel(requested, wheel, extensionVersion, processOptions);
      }
    }
    const probed = await probeInterpreter(interpreter.command, processOptions);
    if (!probed.ok) {
      status.showStopped(probed.detail);
      void reportProbeProblem(interpreter.command, probed);
      return;
    }
    const { probe } = probed;
    const shownAs = probe.executable === interpreter.command ? interpreter.command : `${interpreter.command} (${probe.executable})`;
    log().info(`${DISTRIBUTION} in ${shownAs}: ${probe.importable ? (probe.version ?? "importable, of unknown version") : "not importable"}; pip: ${probe.pip ? "yes" : "no"}`);
    const plan = planServerStart(probe, extensionVersion);
    if (plan.offer !== undefined) offerInstall(interpreter.command, shownAs, plan.offer, probe.pip);
    if (!plan.start) {
      log().error(`${DISTRIBUTION} is not installed in ${shownAs}.`);
      status.showStopped(`${DISTRIBUTION} is not installed in ${interpreter.command}`);
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
      // The metadata can differ from what runs (a checkout on PYTHONPATH): the server has the last word.
      const serverVersion = starting.initializeResult?.serverInfo?.version;
      if (plan.offer === undefined && serverVersionDiffers(serverVersion, extensionVersion)) {
        log().warn(`The server is ${DISTRIBUTION} ${serverVersion ?? "of unknown version"}, the extension ${extensionVersion}.`);
        offerInstall(interpreter.command, shownAs, { kind: "update", installed: serverVersion ?? null }, probe.pip);
      }
    } catch (error) {
      log().error(`The server did not start: ${String(error)}`);
      status.showStopped("the server did not start: see the log");
    }
  };
  const restarts = new RestartQueue(restartServer, (error) => log().error(`Restart failed: ${String(error)}`));
  requestRestart = (why: string): Promise<void> => {
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
    vscode.commands.registerCommand("fxLsp.restart", () => {
      // An explicit restart may follow a fix the extension cannot see (pip added, a venv made).
      offers.reset();
      return requestRestart("FX: Restart Server");
    }),
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
