// Renders images/icon.svg to images/icon.png (256x256, transparent corners) with the headless
// chromium the e2e test uses: the Marketplace and Open VSX refuse SVG icons, so the vsix carries
// the PNG and the SVG is its editable source. Run after editing the SVG and commit both.
import { chromium } from "playwright-core";
import { readFileSync } from "node:fs";

const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const SIZE = 256;

const svg = readFileSync("images/icon.svg", "utf8");
const browser = await chromium.launch({ executablePath: CHROMIUM, args: ["--no-sandbox"] });
try {
  const page = await browser.newPage({ viewport: { width: SIZE, height: SIZE } });
  await page.setContent(`<html><body style="margin:0;background:transparent">${svg}</body></html>`);
  await page.locator("svg").screenshot({ path: "images/icon.png", omitBackground: true });
} finally {
  await browser.close();
}
console.log(`images/icon.png: ${SIZE}x${SIZE}`);
