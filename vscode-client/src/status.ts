// The language status item shown for Python files, driven by the server's `fxLsp/status`
// notification: idle / tracing N modules / last error, with a link to the log.
import * as vscode from "vscode";

export interface ServerStatus {
  state: "idle" | "tracing" | "disabled" | "error";
  pending: number;
  message?: string;
}

/** The item's text, detail and severity for a status; pure so that it reads the same everywhere. */
export function describeStatus(status: ServerStatus): { text: string; detail: string; severity: "information" | "error"; busy: boolean } {
  switch (status.state) {
    case "tracing":
      return {
        text: `FX: tracing ${status.pending} module${status.pending === 1 ? "" : "s"}`,
        detail: status.message ?? "",
        severity: "information",
        busy: true,
      };
    case "disabled":
      return { text: "FX: off", detail: status.message ?? "tracing is off", severity: "information", busy: false };
    case "error":
      return { text: "FX: error", detail: status.message ?? "see the log", severity: "error", busy: false };
    case "idle":
      return { text: "FX: idle", detail: status.message ?? "", severity: "information", busy: false };
  }
}

export class StatusItem implements vscode.Disposable {
  private readonly item: vscode.LanguageStatusItem;

  constructor() {
    this.item = vscode.languages.createLanguageStatusItem("fxLsp.status", { language: "python" });
    this.item.name = "FX Trace";
    this.item.command = { title: "Show Log", command: "fxLsp.showLog" };
    this.showStarting();
  }

  showStarting(): void {
    this.apply("FX: starting", "", "information", true);
  }

  showStopped(reason: string): void {
    this.apply("FX: stopped", reason, "error", false);
  }

  show(status: ServerStatus): void {
    const { text, detail, severity, busy } = describeStatus(status);
    this.apply(text, detail, severity, busy);
  }

  private apply(text: string, detail: string, severity: "information" | "error", busy: boolean): void {
    this.item.text = text;
    this.item.detail = detail;
    this.item.busy = busy;
    this.item.severity = severity === "error" ? vscode.LanguageStatusSeverity.Error : vscode.LanguageStatusSeverity.Information;
  }

  dispose(): void {
    this.item.dispose();
  }
}
