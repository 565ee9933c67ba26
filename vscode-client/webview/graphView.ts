// Draws a class's traced graph as SVG, laid out by dagre (bundled, no network): submodules
// collapse into one box each, nodes are searchable by name, a click reveals a node's source
// line, and the host (the VS Code webview or the standalone HTML file) says what reveal and
// copy mean. Colours come from VS Code's theme variables, with light/dark fallbacks.
import dagre from "@dagrejs/dagre";
import { onnxModelLines } from "./onnxModel";
import {
  FRAMES_UP_TO,
  GraphData,
  GraphLocation,
  GraphNodeData,
  MAX_BOXES,
  VisibleGraph,
  VisibleItem,
  allScopes,
  firstBoxes,
  initialExpansion,
  itemsFor,
  keptExpansion,
  locationText,
  nodeId,
  nodesAtLine,
  revealing,
  searchNodes,
  visibleGraph,
} from "./graphModel";

export interface GraphHost {
  /** Show a node's source line (the editor beside, or the location as text). */
  reveal(location: GraphLocation): void;
  /** Put a node name on the clipboard. */
  copy(text: string): void;
  /** Draw the class's graph of another capture mode (absent where the page cannot ask). */
  selectMode?(mode: string): void;
}

const SVG = "http://www.w3.org/2000/svg";
const NODE_HEIGHT = 40;
const CHARACTER_WIDTH = 7.2;

const STYLE = `
:root { color-scheme: light dark; }
body { margin: 0; font-family: var(--vscode-font-family, system-ui, sans-serif); font-size: 13px;
  color: var(--vscode-foreground, #1f1f1f); background: var(--vscode-editor-background, #ffffff); }
@media (prefers-color-scheme: dark) { body:not(.vscode-light):not(.vscode-dark):not(.vscode-high-contrast) {
  color: #d4d4d4; background: #1e1e1e; } }
.fx-toolbar { display: flex; gap: 8px; align-items: center; padding: 6px 8px; flex-wrap: wrap;
  border-bottom: 1px solid var(--vscode-panel-border, #8884); }
.fx-title { font-weight: 600; }
.fx-facts { opacity: 0.8; }
.fx-toolbar input { background: var(--vscode-input-background, transparent); color: inherit;
  border: 1px solid var(--vscode-input-border, #8888); padding: 2px 6px; min-width: 14em; }
.fx-toolbar button, .fx-details button { background: var(--vscode-button-secondaryBackground, #8882);
  color: var(--vscode-button-secondaryForeground, inherit); border: 1px solid #8884; padding: 2px 8px; cursor: pointer; }
.fx-messages { padding: 0 8px; }
.fx-message { margin: 4px 0; }
.fx-message.error { color: var(--vscode-errorForeground, #c62828); }
.fx-message.warning { color: var(--vscode-editorWarning-foreground, #b26a00); }
.fx-message a { cursor: pointer; text-decoration: underline; }
.fx-canvas { position: absolute; left: 0; right: 0; bottom: 0; overflow: hidden; cursor: grab; }
.fx-canvas svg { width: 100%; height: 100%; user-select: none; }
.fx-item rect { fill: var(--vscode-editorWidget-background, #f3f3f3); stroke: var(--vscode-editorWidget-border, #8889); rx: 4; }
.fx-item text { fill: var(--vscode-foreground, currentColor); font-size: 12px; }
.fx-item text.fx-sub { opacity: 0.75; font-size: 11px; }
.fx-item { cursor: pointer; }
.fx-item.op-placeholder rect, .fx-item.op-output rect { stroke: var(--vscode-charts-blue, #1976d2); }
.fx-item.op-call_module rect { stroke: var(--vscode-charts-green, #2e7d32); }
.fx-item.op-get_attr rect { stroke: var(--vscode-charts-purple, #7b1fa2); }
.fx-item.op-group rect { fill: var(--vscode-editor-inactiveSelectionBackground, #e8e8e8); stroke-dasharray: 4 2; }
.fx-item.failed rect { stroke: var(--vscode-errorForeground, #c62828); stroke-width: 2.5; }
.fx-item.selected rect { stroke: var(--vscode-focusBorder, #0078d4); stroke-width: 3; }
.fx-item.highlighted rect { fill: var(--vscode-editor-findMatchHighlightBackground, #ffe08a); }
.fx-cluster rect { fill: none; stroke: var(--vscode-editorWidget-border, #8886); stroke-dasharray: 2 3; rx: 6; }
.fx-cluster text { fill: var(--vscode-foreground, currentColor); opacity: 0.7; font-size: 11px; cursor: pointer; }
.fx-edge { fill: none; stroke: var(--vscode-editorLineNumber-foreground, #888); stroke-width: 1.2; }
#fx-arrow path { fill: var(--vscode-editorLineNumber-foreground, #888); }
.fx-details { position: absolute; right: 8px; bottom: 8px; max-width: 26em; padding: 8px;
  background: var(--vscode-editorWidget-background, #f3f3f3); border: 1px solid var(--vscode-editorWidget-border, #8889); }
.fx-details code { font-family: var(--vscode-editor-font-family, monospace); }
.fx-details div { margin: 2px 0; }
`;

function element<K extends keyof HTMLElementTagNameMap>(tag: K, className: string, text?: string): HTMLElementTagNameMap[K] {
  const created = document.createElement(tag);
  created.className = className;
  if (text !== undefined) created.textContent = text;
  return created;
}

function svg<K extends keyof SVGElementTagNameMap>(tag: K, attributes: Record<string, string | number> = {}): SVGElementTagNameMap[K] {
  const created = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attributes)) created.setAttribute(key, String(value));
  return created;
}

/** `folder/file.py:12`: the end of the location's path (`nb.ipynb:cell 3:4` for a cell). */
function fileLabel(location: GraphLocation): string {
  return locationText(location).split("/").slice(-2).join("/");
}

export class GraphView {
  private data: GraphData | null = null;
  private expanded = new Set<string>();
  private visible: VisibleGraph = { items: [], edges: [], clusters: [] };
  private highlighted: string[] = [];
  private selected: string | null = null;
  private readonly toolbar = element("div", "fx-toolbar");
  private readonly messages = element("div", "fx-messages");
  private readonly canvas = element("div", "fx-canvas");
  private readonly details = element("div", "fx-details");
  private readonly search = element("input", "");
  private readonly root = svg("svg");
  private readonly viewport = svg("g");
  private transform = { x: 0, y: 0, scale: 1 };
  private readonly boxes = new Map<string, SVGGElement>();

  constructor(private readonly host: GraphHost, container: HTMLElement) {
    const style = document.createElement("style");
    style.textContent = STYLE;
    document.head.appendChild(style);
    this.search.type = "search";
    this.search.placeholder = "Search nodes by name";
    this.search.setAttribute("aria-label", "Search nodes by name");
    this.search.addEventListener("input", () => this.find(this.search.value, false));
    this.search.addEventListener("keydown", (event) => {
      if (event.key === "Enter") this.find(this.search.value, true);
    });
    const defs = svg("defs");
    const marker = svg("marker", { id: "fx-arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" });
    marker.appendChild(svg("path", { d: "M 0 0 L 10 5 L 0 10 z" }));
    defs.appendChild(marker);
    this.root.append(defs, this.viewport);
    this.canvas.appendChild(this.root);
    this.details.hidden = true;
    container.append(this.toolbar, this.messages, this.canvas, this.details);
    this.enablePanAndZoom();
    new ResizeObserver(() => this.placeCanvas()).observe(container);
  }

  /** Show a (new) trace of the class; the expanded submodules that still exist stay open. */
  show(data: GraphData | null, message?: string): void {
    const sameClass = this.data !== null && data !== null && this.data.qualifiedName === data.qualifiedName;
    this.data = data;
    if (data !== null) this.expanded = sameClass ? keptExpansion(data, this.expanded) : initialExpansion(data);
    if (!sameClass) this.selected = null;
    this.renderToolbar(message);
    this.renderMessages();
    this.draw(!sameClass);
    document.body.dataset.nodes = String(data?.nodes.length ?? 0);
    document.body.dataset.rendered = String(Number(document.body.dataset.rendered ?? 0) + 1);
    performance.mark("fx-graph-drawn"); // benchmarks/editor/graph_view.py reads when the first came
  }

  /** Mark the nodes made on a (0-based) line of a file: the cursor moved there in the editor. */
  highlightLine(uri: string, line: number): void {
    if (this.data !== null) this.highlightNodes(nodesAtLine(this.data, uri, line));
  }

  /** Mark these nodes (or the boxes of the submodules holding them) and bring them into view. */
  highlightNodes(names: string[]): void {
    this.highlighted = names;
    this.applyMarks();
    const [first] = itemsFor(this.visible, names);
    if (first !== undefined) this.centerOn(first);
  }

  private renderToolbar(message?: string): void {
    const data = this.data;
    this.toolbar.replaceChildren();
    if (data === null) {
      this.toolbar.append(element("span", "fx-title", message ?? "No graph."));
      return;
    }
    this.toolbar.append(element("span", "fx-title", data.qualifiedName));
    this.renderModeSwitch(data);
    const facts = [data.status === "failed" ? "failed (recovered graph)" : data.status, `${data.nodes.length} nodes`];
    if (data.inputs !== null) facts.push(`inputs ${Object.entries(data.inputs).map(([name, spec]) => `${name}: ${spec}`).join(", ")} (${data.inputsFrom})`);
    if (data.outputShape !== null) facts.push(`→ ${data.outputShape}`);
    this.toolbar.append(element("span", "fx-facts", facts.join(" · ")), this.search);
    const expand = element("button", "", "Expand all");
    expand.addEventListener("click", () => this.setExpansion(new Set(allScopes(data)), true));
    const collapse = element("button", "", "Collapse all");
    collapse.addEventListener("click", () => this.setExpansion(new Set(), true));
    const fit = element("button", "", "Fit");
    fit.addEventListener("click", () => this.fit());
    this.toolbar.append(expand, collapse, fit);
  }

  /** Which capture mode's graph this is: a pick between the class's modes when the host can
   * draw another, else the mode's name (when it is not plain fx). */
  private renderModeSwitch(data: GraphData): void {
    const modes = data.modes ?? [];
    const selectMode = this.host.selectMode?.bind(this.host);
    if (modes.length > 1 && selectMode !== undefined) {
      const pick = element("select", "fx-mode");
      pick.setAttribute("aria-label", "Capture mode");
      for (const mode of modes) {
        const option = element("option", "", mode);
        option.value = mode;
        option.selected = mode === data.mode;
        pick.append(option);
      }
      pick.addEventListener("change", () => selectMode(pick.value));
      this.toolbar.append(pick);
    } else if (data.mode !== undefined && data.mode !== "fx") {
      this.toolbar.append(element("span", "fx-mode", data.mode));
    }
  }

  private renderMessages(): void {
    this.messages.replaceChildren();
    const data = this.data;
    if (data === null) return;
    const notes = [...data.notes, ...onnxModelLines(data.onnx)];
    for (const note of notes) this.messages.append(element("div", "fx-message", note));
    for (const failure of data.failures) {
      const line = element("div", `fx-message ${failure.severity}`);
      const link = element("a", "", fileLabel(failure.location));
      link.addEventListener("click", () => {
        this.host.reveal(failure.location);
        this.highlightNodes(failure.nodes);
      });
      line.append(`${failure.code} `, link, `: ${failure.message}`);
      this.messages.append(line);
    }
    this.placeCanvas();
  }

  private placeCanvas(): void {
    this.canvas.style.top = `${this.toolbar.offsetHeight + this.messages.offsetHeight}px`;
  }

  /** Open or close submodules, unless that would draw more boxes than stay usable. */
  private setExpansion(expanded: Set<string>, fit: boolean): boolean {
    if (this.data === null) return false;
    const boxes = visibleGraph(this.data, expanded).items.length;
    if (boxes > MAX_BOXES) {
      this.notice(`That would draw ${boxes} boxes, over the ${MAX_BOXES} that stay usable: open one submodule at a time, or search for a node and press Enter.`);
      return false;
    }
    this.notice("");
    this.expanded = expanded;
    this.draw(fit);
    return true;
  }

  private notice(text: string): void {
    this.messages.querySelector(".fx-notice")?.remove();
    if (text !== "") this.messages.prepend(element("div", "fx-message warning fx-notice", text));
    this.placeCanvas();
  }

  private find(query: string, reveal: boolean): void {
    if (this.data === null) return;
    const names = searchNodes(this.data, query);
    if (reveal && names.length > 0) this.setExpansion(revealing(this.data, this.expanded, names.slice(0, 1)), false);
    this.highlightNodes(names);
  }

  private draw(fit: boolean): void {
    this.viewport.replaceChildren();
    this.boxes.clear();
    if (this.data === null) {
      this.visible = { items: [], edges: [], clusters: [] };
      return;
    }
    this.visible = visibleGraph(this.data, this.expanded);
    const boxes = this.visible.items.length;
    if (boxes > MAX_BOXES) {
      this.visible = firstBoxes(this.visible, MAX_BOXES);
      this.notice(`Showing the first ${MAX_BOXES} of ${boxes} boxes in graph order: the class has too few submodules to collapse into fewer.`);
    }
    if (this.visible.items.length > FRAMES_UP_TO) {
      this.visible = { ...this.visible, clusters: [], items: this.visible.items.map((item) => ({ ...item, parent: undefined })) };
    }
    const layout = new dagre.graphlib.Graph({ compound: true, multigraph: false });
    layout.setGraph({ rankdir: "TB", nodesep: 24, ranksep: 36, marginx: 16, marginy: 16 });
    layout.setDefaultEdgeLabel(() => ({}));
    for (const cluster of this.visible.clusters) {
      layout.setNode(cluster.id, { label: cluster.label, paddingTop: 24 });
    }
    for (const cluster of this.visible.clusters) if (cluster.parent !== undefined) layout.setParent(cluster.id, cluster.parent);
    for (const item of this.visible.items) {
      const longest = Math.max(item.name.length, item.detail.length + (item.shape?.length ?? 0) + 3);
      layout.setNode(item.id, { width: Math.max(80, longest * CHARACTER_WIDTH + 20), height: NODE_HEIGHT });
      if (item.parent !== undefined) layout.setParent(item.id, item.parent);
    }
    for (const [from, to] of this.visible.edges) layout.setEdge(from, to);
    dagre.layout(layout);

    for (const cluster of this.visible.clusters) {
      const box = layout.node(cluster.id);
      const group = svg("g", { class: "fx-cluster" });
      group.append(
        svg("rect", { x: box.x - box.width / 2, y: box.y - box.height / 2, width: box.width, height: box.height }),
      );
      const label = svg("text", { x: box.x - box.width / 2 + 8, y: box.y - box.height / 2 + 15 });
      label.textContent = `▾ ${cluster.label}`;
      label.addEventListener("click", () => {
        const expanded = new Set(this.expanded);
        expanded.delete(cluster.scope);
        this.setExpansion(expanded, false);
      });
      group.append(label);
      this.viewport.append(group);
    }
    for (const edge of layout.edges()) {
      const points: { x: number; y: number }[] = layout.edge(edge).points ?? [];
      const path = points.map((point, index) => `${index === 0 ? "M" : "L"}${point.x},${point.y}`).join(" ");
      this.viewport.append(svg("path", { class: "fx-edge", d: path, "marker-end": "url(#fx-arrow)" }));
    }
    for (const item of this.visible.items) this.drawItem(item, layout.node(item.id));
    this.applyMarks();
    if (fit) this.fit();
  }

  private drawItem(item: VisibleItem, box: { x: number; y: number; width: number; height: number }): void {
    const group = svg("g", { class: `fx-item op-${item.op}`, "data-id": item.id, "data-name": item.name, transform: `translate(${box.x - box.width / 2},${box.y - box.height / 2})` });
    const title = svg("title");
    title.textContent = item.kind === "group" ? `${item.name}: click to expand` : `${item.name}: click to go to its source line`;
    const name = svg("text", { x: 10, y: 16 });
    name.textContent = item.kind === "group" ? `▸ ${item.name}` : item.name;
    const detail = svg("text", { x: 10, y: 32, class: "fx-sub" });
    detail.textContent = item.shape === null ? item.detail : `${item.detail} · ${item.shape}`;
    group.append(title, svg("rect", { width: box.width, height: box.height }), name, detail);
    group.addEventListener("click", (event) => {
      event.stopPropagation();
      if (item.kind === "group") {
        this.setExpansion(new Set([...this.expanded, item.name]), false);
      } else {
        this.select(item.name);
      }
    });
    this.viewport.append(group);
    this.boxes.set(item.id, group);
  }

  private select(name: string): void {
    const node = this.data?.nodes.find((candidate) => candidate.name === name);
    if (node === undefined) return;
    this.selected = name;
    this.applyMarks();
    this.renderDetails(node);
    if (node.location !== null) this.host.reveal(node.location);
  }

  private renderDetails(node: GraphNodeData): void {
    this.details.replaceChildren();
    const rows: [string, string][] = [
      ["node", node.name],
      ["op", node.op],
      ["target", node.target],
    ];
    if (node.shape !== null) rows.push(["shape", node.shape]);
    if (node.scope.length > 0) rows.push(["in", node.scope[node.scope.length - 1]]);
    if (node.location !== null) rows.push(["source", fileLabel(node.location)]);
    for (const [key, value] of rows) {
      const row = element("div", "");
      row.append(`${key}: `, element("code", "", value));
      this.details.append(row);
    }
    const copy = element("button", "fx-copy", "Copy node name");
    copy.title = "For torchvision's create_feature_extractor(return_nodes=...)";
    copy.addEventListener("click", () => this.host.copy(node.name));
    this.details.append(copy);
    if (node.location !== null) {
      const location = node.location;
      const go = element("button", "", "Go to source");
      go.addEventListener("click", () => this.host.reveal(location));
      this.details.append(" ", go);
    }
    this.details.hidden = false;
  }

  private applyMarks(): void {
    const highlighted = new Set(itemsFor(this.visible, this.highlighted));
    const failed = new Set(this.visible.items.filter((item) => item.failed).map((item) => item.id));
    for (const [id, box] of this.boxes) {
      box.classList.toggle("highlighted", highlighted.has(id));
      box.classList.toggle("failed", failed.has(id));
      box.classList.toggle("selected", this.selected !== null && id === nodeId(this.selected));
    }
  }

  private bounds(): DOMRect | null {
    return this.viewport.childElementCount > 0 ? (this.viewport as SVGGraphicsElement).getBBox() : null;
  }

  private fit(): void {
    const box = this.bounds();
    const width = this.canvas.clientWidth || window.innerWidth;
    const height = this.canvas.clientHeight || window.innerHeight;
    if (box === null || box.width === 0) return;
    const scale = Math.min(1.5, Math.max(0.05, Math.min(width / (box.width + 32), height / (box.height + 32))));
    this.transform = { scale, x: (width - box.width * scale) / 2 - box.x * scale, y: 16 - box.y * scale };
    this.applyTransform();
  }

  private centerOn(id: string): void {
    const box = this.boxes.get(id);
    if (box === undefined) return;
    const bounds = box.getBBox();
    const matrix = box.transform.baseVal.consolidate()?.matrix;
    const x = (matrix?.e ?? 0) + bounds.width / 2;
    const y = (matrix?.f ?? 0) + bounds.height / 2;
    const scale = Math.max(this.transform.scale, 0.6);
    this.transform = { scale, x: this.canvas.clientWidth / 2 - x * scale, y: this.canvas.clientHeight / 2 - y * scale };
    this.applyTransform();
  }

  private applyTransform(): void {
    const { x, y, scale } = this.transform;
    this.viewport.setAttribute("transform", `translate(${x},${y}) scale(${scale})`);
  }

  private enablePanAndZoom(): void {
    let dragging: { x: number; y: number } | null = null;
    this.canvas.addEventListener("pointerdown", (event) => {
      if ((event.target as Element).closest(".fx-item, .fx-cluster text") !== null) return;
      dragging = { x: event.clientX - this.transform.x, y: event.clientY - this.transform.y };
      this.canvas.setPointerCapture(event.pointerId);
    });
    this.canvas.addEventListener("pointermove", (event) => {
      if (dragging === null) return;
      this.transform = { ...this.transform, x: event.clientX - dragging.x, y: event.clientY - dragging.y };
      this.applyTransform();
    });
    this.canvas.addEventListener("pointerup", () => {
      dragging = null;
    });
    this.canvas.addEventListener("wheel", (event) => {
      event.preventDefault();
      const factor = Math.exp(-event.deltaY * 0.0015);
      const scale = Math.min(4, Math.max(0.02, this.transform.scale * factor));
      const rect = this.canvas.getBoundingClientRect();
      const px = event.clientX - rect.left;
      const py = event.clientY - rect.top;
      this.transform = { scale, x: px - ((px - this.transform.x) * scale) / this.transform.scale, y: py - ((py - this.transform.y) * scale) / this.transform.scale };
      this.applyTransform();
    }, { passive: false });
  }
}

