// What the graph view shows, from the server's `fxLsp/graph` answer (docs/contracts.md) and the
// set of expanded submodules: pure functions, shared by the VS Code webview and the HTML file
// `fx-lsp graph` writes, and unit-tested without a browser.

import type { OnnxModelData } from "./onnxModel";

export interface Position {
  line: number;
  character: number;
}

export interface GraphLocation {
  uri: string;
  range: { start: Position; end: Position };
  /** How to name the place when its URI does not (a notebook cell's: `nb.ipynb:cell 3:4`). */
  label?: string;
}

export interface GraphNodeData {
  name: string;
  op: string;
  target: string;
  inputs: string[];
  shape: string | null;
  /** Qualified names of the submodules the node was made in, outermost first. */
  scope: string[];
  location: GraphLocation | null;
}

export interface GraphFailure {
  code: string;
  severity: "error" | "warning";
  message: string;
  location: GraphLocation;
  /** The nodes made on the failure's lines. */
  nodes: string[];
}

export interface GraphData {
  uri?: string;
  version?: number | null;
  className: string;
  qualifiedName: string;
  status: "traceable" | "failed" | "not-traced";
  location: GraphLocation;
  inputs: Record<string, string> | null;
  inputsFrom: string | null;
  outputShape: string | null;
  notes: string[];
  nodes: GraphNodeData[];
  /** Submodule qualified name -> class name. */
  scopes: Record<string, string>;
  failures: GraphFailure[];
  /** The capture mode this graph is of (`fx`, `export`, ...), and every mode the class has a
   * verdict of: the view offers a switch between them. */
  mode?: string;
  modes?: string[];
  /** The onnx mode's translated model (onnxModel.ts); null in other modes. */
  onnx?: OnnxModelData | null;
}

/** From the extension to the webview. */
export type ToWebview =
  | { type: "graph"; data: GraphData | null; message?: string }
  | { type: "highlightLine"; uri: string; line: number };

/** From the webview to the extension. */
export type FromWebview =
  | { type: "ready" }
  | { type: "reveal"; location: GraphLocation }
  | { type: "copy"; text: string }
  | { type: "mode"; mode: string };

/** One box of the drawing: a node, or a collapsed submodule standing for its nodes. */
export interface VisibleItem {
  id: string;
  kind: "node" | "group";
  /** The node's name, or the submodule's qualified name. */
  name: string;
  detail: string;
  shape: string | null;
  op: string;
  /** Names of the graph nodes it stands for. */
  members: string[];
  failed: boolean;
  /** The expanded submodule drawn around it, if any. */
  parent: string | undefined;
}

/** An expanded submodule, drawn as a frame around its items. */
export interface Cluster {
  id: string;
  scope: string;
  label: string;
  parent: string | undefined;
}

export interface VisibleGraph {
  items: VisibleItem[];
  edges: [string, string][];
  clusters: Cluster[];
}

/** Graphs up to this many nodes open with every submodule expanded; larger ones collapsed. */
export const EXPAND_ALL_UP_TO = 150;
/** dagre's layout time grows about quadratically with the boxes (measured: 400 boxes take about
 * 2 s, 2,000 over 20 s), and twice over with frames: more boxes than this are not drawn... */
export const MAX_BOXES = 400;
/** ...and frames around expanded submodules are drawn up to this many boxes. */
export const FRAMES_UP_TO = 150;

export const groupId = (scope: string): string => `group:${scope}`;
export const nodeId = (name: string): string => `node:${name}`;
export const clusterId = (scope: string): string => `cluster:${scope}`;

function scopeLabel(data: GraphData, scope: string): string {
  const kind = data.scopes[scope];
  return kind === undefined ? scope : `${scope} (${kind})`;
}

/** Every submodule scope of the graph, outermost first. */
export function allScopes(data: GraphData): string[] {
  const scopes = new Set<string>();
  for (const node of data.nodes) for (const scope of node.scope) scopes.add(scope);
  return [...scopes];
}

export function initialExpansion(data: GraphData): Set<string> {
  return data.nodes.length <= EXPAND_ALL_UP_TO ? new Set(allScopes(data)) : new Set();
}

/** The box a node is drawn in: itself, or its outermost collapsed submodule. */
function representative(node: GraphNodeData, expanded: Set<string>): { id: string; depth: number } {
  const index = node.scope.findIndex((scope) => !expanded.has(scope));
  return index < 0 ? { id: nodeId(node.name), depth: node.scope.length } : { id: groupId(node.scope[index]), depth: index };
}

export function failedNodes(data: GraphData): Set<string> {
  return new Set(data.failures.flatMap((failure) => failure.nodes));
}

export function visibleGraph(data: GraphData, expanded: Set<string>): VisibleGraph {
  const failed = failedNodes(data);
  const items = new Map<string, VisibleItem>();
  const representativeOf = new Map<string, string>();
  const clusters = new Map<string, Cluster>();
  for (const node of data.nodes) {
    const { id, depth } = representative(node, expanded);
    representativeOf.set(node.name, id);
    // The expanded scopes around the box, each inside the one before.
    for (let index = 0; index < depth; index++) {
      const scope = node.scope[index];
      if (!clusters.has(clusterId(scope))) {
        clusters.set(clusterId(scope), {
          id: clusterId(scope),
          scope,
          label: scopeLabel(data, scope),
          parent: index > 0 ? clusterId(node.scope[index - 1]) : undefined,
        });
      }
    }
    const parent = depth > 0 ? clusterId(node.scope[depth - 1]) : undefined;
    let item = items.get(id);
    if (item === undefined) {
      const isGroup = depth < node.scope.length; // drawn inside its collapsed scope
      const scope = isGroup ? node.scope[depth] : "";
      item = {
        id,
        kind: isGroup ? "group" : "node",
        name: isGroup ? scope : node.name,
        detail: isGroup ? (data.scopes[scope] ?? "submodule") : node.op === "call_module" || node.op === "call_function" || node.op === "call_method" ? node.target : node.op,
        shape: node.shape,
        op: isGroup ? "group" : node.op,
        members: [],
        failed: false,
        parent,
      };
      items.set(id, item);
    }
    item.members.push(node.name);
    // A collapsed submodule shows the shape of the last node made in it.
    if (item.kind === "group" && node.shape !== null) item.shape = node.shape;
    item.failed ||= failed.has(node.name);
  }
  const edges = new Map<string, [string, string]>();
  for (const node of data.nodes) {
    const to = representativeOf.get(node.name)!;
    for (const input of node.inputs) {
      const from = representativeOf.get(input);
      if (from !== undefined && from !== to) edges.set(`${from}\u0000${to}`, [from, to]);
    }
  }
  for (const item of items.values()) {
    if (item.kind === "group") item.detail = `${item.detail} · ${item.members.length} node${item.members.length === 1 ? "" : "s"}`;
  }
  return { items: [...items.values()], edges: [...edges.values()], clusters: [...clusters.values()] };
}

/** The first `limit` boxes in graph order, for a graph too large even with every submodule
 * collapsed (a long model without submodules): the rest is left out, and said so. */
export function firstBoxes(graph: VisibleGraph, limit: number): VisibleGraph {
  if (graph.items.length <= limit) return graph;
  const items = graph.items.slice(0, limit);
  const kept = new Set(items.map((item) => item.id));
  // The frames around the kept boxes, and the frames around those, out to the outermost.
  const parentOf = new Map(graph.clusters.map((cluster) => [cluster.id, cluster.parent]));
  const frames = new Set<string>();
  for (const item of items) {
    for (let frame = item.parent; frame !== undefined && !frames.has(frame); frame = parentOf.get(frame)) frames.add(frame);
  }
  return {
    items,
    edges: graph.edges.filter(([from, to]) => kept.has(from) && kept.has(to)),
    clusters: graph.clusters.filter((cluster) => frames.has(cluster.id)),
  };
}

/** A location as `path:line` (1-based), the path from its file URI; its label if it has one. */
export function locationText(location: GraphLocation): string {
  if (location.label !== undefined) return location.label;
  return `${decodeURIComponent(location.uri.replace(/^file:\/\//, ""))}:${location.range.start.line + 1}`;
}

/** Names of the nodes made on a (0-based) line of a file. */
export function nodesAtLine(data: GraphData, uri: string, line: number): string[] {
  return data.nodes
    .filter((node) => node.location !== null && node.location.uri === uri && node.location.range.start.line === line)
    .map((node) => node.name);
}

/** Names of the nodes whose name contains the query (case-insensitive). */
export function searchNodes(data: GraphData, query: string): string[] {
  const wanted = query.trim().toLowerCase();
  if (wanted === "") return [];
  return data.nodes.filter((node) => node.name.toLowerCase().includes(wanted)).map((node) => node.name);
}

/** The expansion with the submodules of these nodes opened, so that each is drawn as itself. */
export function revealing(data: GraphData, expanded: Set<string>, names: string[]): Set<string> {
  const wanted = new Set(names);
  const result = new Set(expanded);
  for (const node of data.nodes) if (wanted.has(node.name)) for (const scope of node.scope) result.add(scope);
  return result;
}

/** The items that stand for any of these nodes. */
export function itemsFor(graph: VisibleGraph, names: string[]): string[] {
  const wanted = new Set(names);
  return graph.items.filter((item) => item.members.some((name) => wanted.has(name))).map((item) => item.id);
}

/** The submodules that still exist in a new trace of the class, of those expanded before. */
export function keptExpansion(data: GraphData, expanded: Set<string>): Set<string> {
  const scopes = new Set(allScopes(data));
  return new Set([...expanded].filter((scope) => scopes.has(scope)));
}
