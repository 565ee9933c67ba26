// `fx-lsp graph PATH::Class -o graph.html` opened in Debian's headless Chromium with every
// network request refused: the page draws the graph from its embedded data (screenshots in
// ARTIFACTS_DIR), its search finds a node, clicking a node shows the node's details and source
// line, and a failed class shows its recovered graph with the failure marked.
//
// Environment: FX_LSP_PYTHON, CHROMIUM and ARTIFACTS_DIR as in vscode.e2e.test.mjs.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const repoDir = path.resolve(here, "..", "..");
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const ARTIFACTS = process.env.ARTIFACTS_DIR ?? path.join(repoDir, "test-artifacts", "vscode");
const PYTHON =
  process.env.FX_LSP_PYTHON ??
  execFileSync("python3", ["-c", "import sys; print(sys.executable)"], { encoding: "utf8" }).trim();

const MODEL = `import torch
from torch import nn


def gate(x):
    return torch.sigmoid(x) * x


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(16, 16)

    def forward(self, x):
        return gate(self.proj(x)) + x


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(3)])
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x)


class Flat(nn.Module):
    def forward(self, x):
        for _ in range(250):
            x = x * 2 + 1
        return x


class Branches(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        y = self.head(x)
        if y.sum() > 0:
            y = y * 2
        return y.relu()


HOSTILE = '</script><img src=x onerror="pwned=1"><b>bold</b>'


class Hostile(nn.Module):
    """Names and texts a workspace controls: a submodule name, a shape-free string target, a
    failure message; each must show as text, never as markup or script."""

    def __init__(self):
        super().__init__()
        self.add_module(HOSTILE, nn.Linear(16, 16))

    def forward(self, x):
        y = getattr(self, HOSTILE)(x)
        if y.sum() > 0:
            raise RuntimeError(HOSTILE)
        return y
`;

const run = { dir: "", browser: undefined, refused: [] };

/** `fx-lsp graph net.py::<className>`, opened in the browser; it must load without errors. */
async function openGraph(className) {
  const file = path.join(run.dir, `${className}.graph.html`);
  execFileSync(PYTHON, ["-m", "fx_lsp", "graph", `net.py::${className}`, "-o", file, "--no-cache"], { cwd: run.dir, stdio: "pipe" });
  assert.match(fs.readFileSync(file, "utf8"), /Content-Security-Policy" content="default-src 'none'/);
  const page = await run.browser.newPage({ viewport: { width: 1100, height: 800 } });
  // Nothing may leave the page: every request but the file itself is refused and recorded.
  await page.route("**/*", (route) => {
    if (route.request().url().startsWith("file://")) return route.continue();
    run.refused.push(route.request().url());
    return route.abort();
  });
  const errors = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  await page.goto(`file://${file}`);
  await page.waitForSelector("body[data-rendered]", { timeout: 15_000 });
  assert.deepEqual(errors, []);
  return page;
}

describe("the HTML file of fx-lsp graph in headless Chromium", () => {
  before(async () => {
    run.dir = fs.mkdtempSync(path.join(os.tmpdir(), "fx-graph-html-"));
    fs.writeFileSync(path.join(run.dir, "pyproject.toml"), "[tool.fx-lsp]\n");
    fs.writeFileSync(path.join(run.dir, "net.py"), MODEL);
    run.browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
  });

  after(async () => {
    await run.browser?.close();
    fs.rmSync(run.dir, { recursive: true, force: true });
  });

  it("draws a traceable class, finds a node and shows where it came from", async () => {
    const page = await openGraph("Net");
    // 15 nodes: small enough to open with every submodule expanded, each a frame.
    assert.equal(await page.locator("body").getAttribute("data-nodes"), "15");
    assert.equal(await page.locator(".fx-cluster").count(), 3);
    assert.ok((await page.locator(".fx-item").count()) === 15);
    assert.match(await page.locator(".fx-toolbar").innerText(), /net:Net[\s\S]*traceable[\s\S]*x: float32\[2, 8, 16\]/);
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, "graph-html-net.png") });

    await page.locator(".fx-toolbar input").fill("sigmoid_2");
    await page.locator(".fx-toolbar input").press("Enter");
    const found = page.locator('.fx-item.highlighted[data-name="sigmoid_2"]');
    assert.equal(await found.count(), 1);
    await found.click();
    const details = await page.locator(".fx-details").innerText();
    assert.match(details, /node: sigmoid_2/);
    assert.match(details, /shape: float32\[2, 8, 16\]/);
    assert.match(details, /in: blocks\.2/);
    assert.match(details, /source: .*net\.py:6/); // the helper's line, `return torch.sigmoid(x) * x`
    assert.match(await page.locator(".fx-messages").innerText(), /Source: .*net\.py:6/);

    // Collapsing gives one box per block; clicking a box opens it again.
    await page.locator(".fx-toolbar button", { hasText: "Collapse all" }).click();
    assert.equal(await page.locator(".fx-item.op-group").count(), 3);
    assert.equal(await page.locator(".fx-cluster").count(), 0);
    await page.locator('.fx-item.op-group[data-name="blocks.1"]').click();
    assert.equal(await page.locator(".fx-item.op-group").count(), 2);
    await page.screenshot({ path: path.join(ARTIFACTS, "graph-html-collapsed.png") });
    await page.close();
  });

  it("draws a failed class's recovered graph with the failure marked", async () => {
    const page = await openGraph("Branches");
    const messages = await page.locator(".fx-messages").innerText();
    assert.match(messages, /recovered past the failures/);
    assert.match(messages, /FX001 .*net\.py:44/);
    const failed = await page.locator(".fx-item.failed").evaluateAll((items) => items.map((item) => item.getAttribute("data-name")));
    assert.deepEqual(failed.sort(), ["gt", "sum_1"]);
    await page.screenshot({ path: path.join(ARTIFACTS, "graph-html-failed.png") });
    await page.close();
  });

  it("shows hostile submodule names and messages as text: no element, no script", async () => {
    const page = await openGraph("Hostile");
    const dialogs = [];
    page.on("dialog", (dialog) => { dialogs.push(dialog.message()); dialog.dismiss(); });
    assert.equal(await page.evaluate(() => window.pwned), undefined);
    assert.equal(await page.locator("img").count(), 0);
    assert.equal(await page.locator(".fx-graph b, .fx-messages b, .fx-toolbar b").count(), 0);
    const shown = await page.locator("body").innerText();
    assert.ok(shown.includes('<img src=x onerror="pwned=1">'), shown.slice(0, 2000));
    await page.locator(".fx-toolbar button", { hasText: "Expand all" }).click();
    await page.locator(".fx-item").first().click();
    assert.equal(await page.evaluate(() => window.pwned), undefined);
    assert.deepEqual(dialogs, []);
    await page.screenshot({ path: path.join(ARTIFACTS, "graph-html-hostile.png") });
    await page.close();
  });

  it("draws the first 400 boxes of a graph with no submodules to collapse, and says so", async () => {
    const page = await openGraph("Flat");
    assert.equal(await page.locator("body").getAttribute("data-nodes"), "502");
    assert.equal(await page.locator(".fx-item").count(), 400);
    assert.match(await page.locator(".fx-notice").innerText(), /Showing the first 400 of 502 boxes/);
    await page.close();
    assert.deepEqual(run.refused, []);
  });
});
