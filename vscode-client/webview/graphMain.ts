// The graph view's entry point in the browser. In a VS Code webview it talks to the extension
// (graphPanel.ts) by messages; in the HTML file `fx-lsp graph` writes, the data is embedded as
// `window.FX_GRAPH` and the page works alone, with no network.
import { FromWebview, GraphData, ToWebview, locationText } from "./graphModel";
import { GraphView } from "./graphView";

interface VsCodeApi {
  postMessage(message: FromWebview): void;
}

declare const acquireVsCodeApi: (() => VsCodeApi) | undefined;
declare global {
  interface Window {
    FX_GRAPH?: GraphData | null;
  }
}

function inVsCode(container: HTMLElement): void {
  const vscode = acquireVsCodeApi!();
  const view = new GraphView(
    {
      reveal: (location) => vscode.postMessage({ type: "reveal", location }),
      copy: (text) => vscode.postMessage({ type: "copy", text }),
      selectMode: (mode) => vscode.postMessage({ type: "mode", mode }),
    },
    container,
  );
  window.addEventListener("message", (event: MessageEvent<ToWebview>) => {
    const message = event.data;
    if (message.type === "graph") view.show(message.data, message.message);
    else if (message.type === "highlightLine") view.highlightLine(message.uri, message.line);
  });
  vscode.postMessage({ type: "ready" });
}

function standalone(container: HTMLElement): void {
  const status = document.createElement("div");
  status.className = "fx-message";
  const view = new GraphView(
    {
      reveal: (location) => {
        status.textContent = `Source: ${locationText(location)}`;
      },
      copy: (text) => {
        void navigator.clipboard?.writeText(text);
        status.textContent = `Copied ${text}`;
      },
    },
    container,
  );
  view.show(window.FX_GRAPH ?? null, "This file holds no graph.");
  container.querySelector(".fx-messages")?.prepend(status);
}

const container = document.getElementById("fx-graph") ?? document.body;
if (typeof acquireVsCodeApi === "function") inVsCode(container);
else standalone(container);
