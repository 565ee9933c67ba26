// `FX: Show Graph`: a webview beside the editor drawing a class's traced graph from the server's
// `fxLsp/graph` answer (webview/ holds the drawing code, bundled as dist/graph.js). It follows
// re-traces (`fxLsp/traced`) and the cursor in the source, reveals a clicked node's line,
// copies node names, and switches between the class's capture modes (fx, export, ...). The webview runs only that bundled script, on what the server sent.
import * as vscode from "vscode";
import { LanguageClient } from "vscode-languageclient/node";
import type { FromWebview, GraphData, ToWebview } from "../webview/graphModel";
import { ClassTarget, GENERATED_CODE_SCHEME, TracedParams, classAtCursor, isRetraced, parseGeneratedCodeUri } from "./generatedCode";
import { graphTitle } from "./captureModes";
import { log } from "./log";

export const SHOW_GRAPH_COMMAND = "fxLsp.showGraph";
const GRAPH_REQUEST = "fxLsp/graph";
const VIEW_TYPE = "fxLsp.graph";

function nonce(): string {
  const characters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  return Array.from({ length: 32 }, () => characters[Math.floor(Math.random() * characters.length)]).join("");
}

class GraphPanel {
  readonly panel: vscode.WebviewPanel;
  private ready = false;
  /** The capture mode picked in the view; the class's first verdict's until one is. */
  private mode: string | undefined;

  constructor(
    readonly target: ClassTarget,
    extensionUri: vscode.Uri,
    private readonly client: () => LanguageClient | undefined,
    onDispose: () => void,
  ) {
    const dist = vscode.Uri.joinPath(extensionUri, "dist");
    this.panel = vscode.window.createWebviewPanel(VIEW_TYPE, `Graph: ${target.className}`, { viewColumn: vscode.ViewColumn.Beside, preserveFocus: false }, {
      enableScripts: true,
      localResourceRoots: [dist],
      retainContextWhenHidden: true,
    });
    const webview = this.panel.webview;
    const scriptNonce = nonce();
    const policy = `default-src 'none'; script-src 'nonce-${scriptNonce}'; style-src ${webview.cspSource} 'unsafe-inline';`;
    webview.html = `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${policy}">
<style>html, body, #fx-graph { height: 100%; }</style></head>
<body><div id="fx-graph"></div>
<script nonce="${scriptNonce}" src="${webview.asWebviewUri(vscode.Uri.joinPath(dist, "graph.js"))}"></script></body></html>`;
    webview.onDidReceiveMessage((message: FromWebview) => void this.receive(message));
    this.panel.onDidDispose(onDispose);
  }

  private async receive(message: FromWebview): Promise<void> {
    if (message.type === "ready") {
      this.ready = true;
      await this.refresh();
    } else if (message.type === "reveal") {
      const uri = vscode.Uri.parse(message.location.uri);
      const { start, end } = message.location.range;
      const selection = new vscode.Range(start.line, start.character, end.line, end.character);
      const shown = vscode.window.visibleTextEditors.find((editor) => editor.document.uri.toString() === uri.toString());
      await vscode.window.showTextDocument(uri, { viewColumn: shown?.viewColumn ?? vscode.ViewColumn.One, selection, preserveFocus: false });
    } else if (message.type === "copy") {
      await vscode.env.clipboard.writeText(message.text);
      void vscode.window.setStatusBarMessage(`FX: copied node name ${message.text}`, 3000);
    } else if (message.type === "mode") {
      this.mode = message.mode;
      await this.refresh();
    }
  }

  private post(message: ToWebview): void {
    if (this.ready) void this.panel.webview.postMessage(message);
  }

  /** Ask the server for the class's graph again and draw it. */
  async refresh(): Promise<void> {
    if (!this.ready) return;
    const client = this.client();
    if (client === undefined || !client.isRunning()) {
      this.post({ type: "graph", data: null, message: "The FX Trace server is not running: see the FX Trace log." });
      return;
    }
    try {
      const params = { uri: this.target.sourceUri, className: this.target.className, ...(this.mode === undefined ? {} : { mode: this.mode }) };
      const data = await client.sendRequest<GraphData | null>(GRAPH_REQUEST, params);
      this.panel.title = graphTitle(this.target.className, data?.mode);
      const why = vscode.workspace.isTrusted
        ? `No trace of ${this.target.className} yet: open or save its file to trace it.`
        : `No trace of ${this.target.className}: in Restricted Mode the server runs no code of the workspace.`;
      this.post({ type: "graph", data, message: data === null ? why : undefined });
    } catch (error) {
      log().error(`${GRAPH_REQUEST} failed: ${String(error)}`);
      this.post({ type: "graph", data: null, message: `The server could not give the graph: ${String(error)}` });
    }
  }

  highlightLine(uri: string, line: number): void {
    this.post({ type: "highlightLine", uri, line });
  }
}

export class GraphPanels implements vscode.Disposable {
  private readonly panels = new Map<string, GraphPanel>();
  private readonly subscriptions: vscode.Disposable[];

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly client: () => LanguageClient | undefined,
  ) {
    this.subscriptions = [
      vscode.window.onDidChangeTextEditorSelection((event) => {
        const uri = event.textEditor.document.uri.toString();
        for (const panel of this.panels.values()) panel.highlightLine(uri, event.selections[0].active.line);
      }),
    ];
  }

  /** The command: `[uri, className]` from a code lens, the generated-code view's URI from its
   * title button, or nothing: the class at the cursor. */
  async show(uriArgument?: string | vscode.Uri, classNameArgument?: string): Promise<void> {
    const target = await this.targetOf(uriArgument, classNameArgument);
    if (target === undefined) return;
    const key = `${target.sourceUri}\u0000${target.className}`;
    const open = this.panels.get(key);
    if (open !== undefined) {
      open.panel.reveal(vscode.ViewColumn.Beside);
      await open.refresh();
      return;
    }
    this.panels.set(key, new GraphPanel(target, this.extensionUri, this.client, () => this.panels.delete(key)));
  }

  /** After the server traced a document again, redraw the graphs of its classes. */
  onTraced(params: TracedParams): void {
    for (const panel of this.panels.values()) if (isRetraced(params, panel.target)) void panel.refresh();
  }

  private async targetOf(uriArgument?: string | vscode.Uri, classNameArgument?: string): Promise<ClassTarget | undefined> {
    if (uriArgument instanceof vscode.Uri && uriArgument.scheme === GENERATED_CODE_SCHEME) return parseGeneratedCodeUri(uriArgument);
    if (uriArgument !== undefined && classNameArgument !== undefined) {
      return { sourceUri: uriArgument.toString(), className: classNameArgument };
    }
    const editor = vscode.window.activeTextEditor;
    if (editor?.document.uri.scheme === GENERATED_CODE_SCHEME) return this.targetOf(editor.document.uri);
    return classAtCursor(this.client());
  }

  dispose(): void {
    for (const panel of this.panels.values()) panel.panel.dispose();
    for (const subscription of this.subscriptions) subscription.dispose();
  }
}
