// One LogOutputChannel for the extension's own messages and the server's (stderr, window/logMessage
// and, with `fxLsp.trace.server`, the protocol trace).
import * as vscode from "vscode";

export const LOG_CHANNEL_NAME = "FX Trace";

let channel: vscode.LogOutputChannel | undefined;

export function createLog(): vscode.LogOutputChannel {
  channel = vscode.window.createOutputChannel(LOG_CHANNEL_NAME, { log: true });
  return channel;
}

export function log(): vscode.LogOutputChannel {
  if (channel === undefined) throw new Error("the FX Trace log is used before activation created it");
  return channel;
}
