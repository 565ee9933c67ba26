// `FX: Show Generated Forward Code`: a read-only virtual document (own URI scheme, language
// python) with the forward that torch.fx generated for a class, filled from the server's
// `fxLsp/generatedCode` request and refreshed on its `fxLsp/traced` notification.
import * as vscode from "vscode";
import { LanguageClient } from "vscode-languageclient/node";
import { log } from "./log";

export const GENERATED_CODE_SCHEME = "fx-lsp-generated";
export const SHOW_GENERATED_CODE_COMMAND = "fxLsp.showGeneratedCode";
const GENERATED_CODE_REQUEST = "fxLsp/generatedCode";

/** The result of `fxLsp/generatedCode` (docs/contracts.md). */
export interface GeneratedCodeResult {
  uri: string;
  className: string;
  qualifiedName: string;
  status: "traceable" | "failed" | "not-traced";
  code: string | null;
  nodeCount: number | null;
  instantiatedOn: string | null;
  traceSeconds: number;
  lineNodes: Record<string, { name: string; op: string; target: string }[]>;
}

/** The payload of the server's `fxLsp/traced` notification. */
export interface TracedParams {
  uri: string;
  version: number | null;
  classes: string[];
}

/** A class of a source file, as the views of the extension name it. */
export interface ClassTarget {
  sourceUri: string;
  className: string;
}

/** Whether a `fxLsp/traced` notification means `target` has a new result (no classes named:
 * all of the file's). */
export function isRetraced(params: TracedParams, target: ClassTarget): boolean {
  return target.sourceUri === params.uri && (params.classes.length === 0 || params.classes.includes(target.className));
}

export function generatedCodeUri(sourceUri: string, className: string): vscode.Uri {
  // The `.py` ending gives the document the python language; the query says what to ask for.
  const query = new URLSearchParams({ source: sourceUri, class: className }).toString();
  return vscode.Uri.from({ scheme: GENERATED_CODE_SCHEME, path: `/${className}.fx.py`, query });
}

export function parseGeneratedCodeUri(uri: vscode.Uri): ClassTarget | undefined {
  const query = new URLSearchParams(uri.query);
  const sourceUri = query.get("source");
  const className = query.get("class");
  return sourceUri !== null && className !== null ? { sourceUri, className } : undefined;
}

function sourceLabel(sourceUri: string): string {
  const parsed = vscode.Uri.parse(sourceUri);
  if (parsed.scheme === "file") return vscode.workspace.asRelativePath(parsed);
  // A notebook cell's: the notebook and the cell's number, as `fx-lsp check` names it.
  for (const notebook of vscode.workspace.notebookDocuments) {
    const cell = notebook.getCells().find((each) => each.document.uri.toString() === sourceUri);
    if (cell !== undefined) return `${vscode.workspace.asRelativePath(notebook.uri)}:cell ${cell.index + 1}`;
  }
  return sourceUri;
}

export function renderGeneratedCode(className: string, sourceUri: string, result: GeneratedCodeResult | null): string {
  const source = sourceLabel(sourceUri);
  if (result === null) {
    return `# No trace result for ${className} in ${source} yet.\n# Open or save the file to trace it.\n`;
  }
  const facts: string[] = [result.status];
  if (result.nodeCount !== null) facts.push(`${result.nodeCount} nodes`);
  if (result.instantiatedOn !== null) facts.push(`built on ${result.instantiatedOn}`);
  facts.push(`traced in ${result.traceSeconds.toFixed(2)} s`);
  const header = `# torch.fx generated forward of ${result.qualifiedName}\n# ${facts.join(" · ")}\n# from ${source} (read-only)\n`;
  if (result.status !== "traceable" || result.code === null) {
    const why = result.status === "failed" ? "it cannot be traced: see the diagnostics in the file" : "it was not traced (its constructor needs arguments?)";
    return `${header}\n# No generated code: ${why}.\n`;
  }
  return `${header}\n${result.code.replace(/^\n+/, "")}`;
}

/** The class at the cursor of the active Python editor (asked of the server), or undefined
 * after telling the user why there is none. */
export async function classAtCursor(client: LanguageClient | undefined): Promise<ClassTarget | undefined> {
  const editor = vscode.window.activeTextEditor;
  if (editor === undefined || editor.document.languageId !== "python" || editor.document.uri.scheme === GENERATED_CODE_SCHEME) {
    void vscode.window.showInformationMessage("FX Trace: put the cursor inside an nn.Module class of a Python file.");
    return undefined;
  }
  if (client === undefined || !client.isRunning()) {
    void vscode.window.showWarningMessage("FX Trace: the server is not running (see the FX Trace log).");
    return undefined;
  }
  const sourceUri = editor.document.uri.toString();
  const position = client.code2ProtocolConverter.asPosition(editor.selection.active);
  const result = await client.sendRequest<GeneratedCodeResult | null>(GENERATED_CODE_REQUEST, { uri: sourceUri, position });
  if (result === null) {
    void vscode.window.showInformationMessage("FX Trace: no traced nn.Module class at the cursor (save the file to trace it).");
    return undefined;
  }
  return { sourceUri, className: result.className };
}

export class GeneratedCodeProvider implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;

  constructor(private readonly client: () => LanguageClient | undefined) {}

  async provideTextDocumentContent(uri: vscode.Uri, token: vscode.CancellationToken): Promise<string> {
    const target = parseGeneratedCodeUri(uri);
    if (target === undefined) return `# Not a generated-code address: ${uri.toString()}\n`;
    const client = this.client();
    if (client === undefined || !client.isRunning()) {
      return "# The FX Trace server is not running: see the FX Trace log.\n";
    }
    try {
      const result = await client.sendRequest<GeneratedCodeResult | null>(
        GENERATED_CODE_REQUEST,
        { uri: target.sourceUri, className: target.className },
        token,
      );
      return renderGeneratedCode(target.className, target.sourceUri, result);
    } catch (error) {
      log().error(`${GENERATED_CODE_REQUEST} failed: ${String(error)}`);
      return `# The server could not give the generated code of ${target.className}: ${String(error)}\n`;
    }
  }

  /** After the server traced a document again, reload the open views of its classes. */
  onTraced(params: TracedParams): void {
    for (const document of vscode.workspace.textDocuments) {
      if (document.uri.scheme !== GENERATED_CODE_SCHEME) continue;
      const target = parseGeneratedCodeUri(document.uri);
      if (target !== undefined && isRetraced(params, target)) this.changed.fire(document.uri);
    }
  }

  /** The command: `[uri, className]` from a code lens, or without arguments the class at the cursor. */
  async show(uriArgument?: string | vscode.Uri, classNameArgument?: string): Promise<void> {
    let sourceUri: string;
    let className: string;
    if (uriArgument !== undefined && classNameArgument !== undefined) {
      sourceUri = typeof uriArgument === "string" ? uriArgument : uriArgument.toString();
      className = classNameArgument;
    } else {
      const found = await classAtCursor(this.client());
      if (found === undefined) return;
      ({ sourceUri, className } = found);
    }
    const document = await vscode.workspace.openTextDocument(generatedCodeUri(sourceUri, className));
    await vscode.window.showTextDocument(document, { preview: false, viewColumn: vscode.ViewColumn.Beside });
  }

  dispose(): void {
    this.changed.dispose();
  }
}
