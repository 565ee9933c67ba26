// Opens graph HTML files (from benchmarks/editor/graph_view.py) in Debian's headless Chromium, with
// playwright-core from vscode-client/node_modules, and prints one JSON line per file: when the
// first drawing was done after navigation began (`performance.mark("fx-graph-drawn")`, parsing
// the embedded data and the script included), and how long "Expand all" (or its refusal, over
// the boxes that stay usable), "Collapse all" and opening one submodule take to lay out and
// draw again. Usage: node graph_open.mjs RUNS FILE...
import { createRequire } from "node:module";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "..", "vscode-client", "package.json"));
const { chromium } = require("playwright-core");

const [runs, ...files] = process.argv.slice(2);
const browser = await chromium.launch({ executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", args: ["--no-sandbox"] });
try {
  for (const file of files) {
    const drawn = [], expand = [], collapse = [], openOne = [];
    let counts;
    for (let run = 0; run < Number(runs); run++) {
      const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
      await page.goto(`file://${path.resolve(file)}`);
      await page.waitForSelector("body[data-rendered]");
      drawn.push(await page.evaluate(() => performance.getEntriesByName("fx-graph-drawn")[0].startTime));
      const boxes = await page.locator(".fx-item").count();
      const click = (label) => page.evaluate((text) => {
        const button = [...document.querySelectorAll(".fx-toolbar button")].find((b) => b.textContent === text);
        const started = performance.now();
        button.click(); // lays out and draws synchronously
        return performance.now() - started;
      }, label);
      expand.push(await click("Expand all"));
      const expandedBoxes = await page.locator(".fx-item").count();
      const notice = await page.evaluate(() => document.querySelector(".fx-notice")?.textContent ?? null);
      collapse.push(await click("Collapse all"));
      // One submodule opened by a click on its box, as a user explores a large graph.
      openOne.push(await page.evaluate(() => {
        const box = document.querySelector(".fx-item.op-group");
        const started = performance.now();
        box?.dispatchEvent(new MouseEvent("click", { bubbles: true }));
        return performance.now() - started;
      }));
      const openedBoxes = await page.locator(".fx-item").count();
      counts = { boxes, expandedBoxes, notice, openedBoxes };
      await page.close();
    }
    console.log(JSON.stringify({ file: path.basename(file), ...counts, drawn, expand, collapse, openOne }));
  }
} finally {
  await browser.close();
}
