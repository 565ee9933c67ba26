// `FX: Trace Workspace`: runs the server command `fxLsp.server.traceWorkspace` with a work-done
// token whose begin/report/end drive a cancellable progress notification.
import { randomUUID } from "node:crypto";
import * as vscode from "vscode";
import {
  ExecuteCommandRequest,
  LanguageClient,
  WorkDoneProgress,
  WorkDoneProgressCancelNotification,
} from "vscode-languageclient/node";
import { log } from "./log";

export const TRACE_WORKSPACE_COMMAND = "fxLsp.traceWorkspace";
/** The server's command (differs from ours: vscode-languageclient registers the server's ids itself). */
export const SERVER_TRACE_WORKSPACE_COMMAND = "fxLsp.server.traceWorkspace";

interface TraceWorkspaceResult {
  files: number;
  modules: number;
  failed: number;
}

export async function traceWorkspace(client: LanguageClient | undefined): Promise<void> {
  if (client === undefined || !client.isRunning()) {
    void vscode.window.showWarningMessage("FX Trace: the server is not running (see the FX Trace log).");
    return;
  }
  const workDoneToken = `fx-lsp-trace-workspace-${randomUUID()}`;
  let cancelled = false;
  const result = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: "FX: tracing the workspace", cancellable: true },
    async (progress, cancellation) => {
      let reported = 0;
      const progressSubscription = client.onProgress(WorkDoneProgress.type, workDoneToken, (value) => {
        if (value.kind === "end") return;
        const step: { message?: string; increment?: number } = { message: value.message };
        if (value.percentage !== undefined && value.percentage > reported) {
          step.increment = value.percentage - reported;
          reported = value.percentage;
        }
        progress.report(step);
      });
      const cancelSubscription = cancellation.onCancellationRequested(() => {
        cancelled = true;
        log().info("Trace Workspace cancelled by the user.");
        void client.sendNotification(WorkDoneProgressCancelNotification.type, { token: workDoneToken });
      });
      try {
        // The cancellation token also sends `$/cancelRequest` for the request itself.
        return await client.sendRequest(
          ExecuteCommandRequest.type,
          { command: SERVER_TRACE_WORKSPACE_COMMAND, arguments: [], workDoneToken },
          cancellation,
        );
      } catch (error) {
        if (cancelled) return undefined;
        throw error;
      } finally {
        progressSubscription.dispose();
        cancelSubscription.dispose();
      }
    },
  );
  const summary = result as TraceWorkspaceResult | null | undefined;
  if (summary === undefined || summary === null) {
    const message = cancelled ? "FX: tracing the workspace was cancelled." : "FX: the server traced nothing (see the FX Trace log).";
    void vscode.window.showInformationMessage(message);
    return;
  }
  const partial = cancelled ? " (cancelled before the end)" : "";
  const message = `FX: traced ${summary.modules} modules in ${summary.files} files; ${summary.failed} not traceable${partial}.`;
  log().info(message);
  void vscode.window.showInformationMessage(message);
}
