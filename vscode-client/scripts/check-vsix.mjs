// Checks fx-lsp.vsix as the Marketplace and Open VSX will receive it:
// - its size is within the budget README.md states;
// - it holds the icon, LICENSE, README and CHANGELOG, and no source maps, sources or node_modules;
// - every link of its README and CHANGELOG is an absolute URL (vsce rewrote the relative ones),
//   images over https, and those into the repository name a file that exists in it;
// - its package.json passes ovsx's own checks (readVSIXPackage, validateManifest: what ovsx reads
//   from a vsix before it needs a token and the network) and marketplace-rules.mjs.
// ovsx has no offline validation command: `ovsx publish x.vsix` uploads at once, with a token, and
// Open VSX validates on its server; marketplace-rules.mjs carries the server's rules.
import { readFileSync, statSync, existsSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { REPOSITORY_URL, VSIX_BUDGET_KB, marketplaceIssues, openVsxIssues } from "./marketplace-rules.mjs";

const require = createRequire(import.meta.url);
const yauzl = require("yauzl-promise");
const { validateManifest } = require("ovsx");
const { readVSIXPackage } = require("ovsx/lib/zip");

const clientDir = fileURLToPath(new URL("..", import.meta.url));
const repositoryRoot = path.resolve(clientDir, "..");
const vsix = path.resolve(process.argv[2] ?? path.join(clientDir, "fx-lsp.vsix"));

const problems = [];

// The budget, as README.md states it to users.
const readme = readFileSync(path.join(clientDir, "README.md"), "utf8");
const stated = /^## Size\n[\s\S]*?at most (\d+) KB/m.exec(readme);
if (!stated) problems.push("README.md has no '## Size' section stating 'at most N KB'");
else if (Number(stated[1]) !== VSIX_BUDGET_KB) {
  problems.push(`README.md states a budget of ${stated[1]} KB, marketplace-rules.mjs ${VSIX_BUDGET_KB} KB`);
}
const sizeKB = statSync(vsix).size / 1024;
if (sizeKB > VSIX_BUDGET_KB) problems.push(`the vsix is ${sizeKB.toFixed(1)} KB, over its budget of ${VSIX_BUDGET_KB} KB`);

/** Every entry of the vsix, by name, with its bytes. */
async function readEntries(file) {
  const entries = new Map();
  const zip = await yauzl.open(file);
  try {
    for await (const entry of zip) {
      const stream = await entry.openReadStream();
      const chunks = [];
      for await (const chunk of stream) chunks.push(chunk);
      entries.set(entry.filename, Buffer.concat(chunks));
    }
  } finally {
    await zip.close();
  }
  return entries;
}
const entries = await readEntries(vsix);

const manifest = await readVSIXPackage(vsix);
try {
  validateManifest(manifest);
} catch (error) {
  problems.push(`ovsx: ${error.message}`);
}
for (const issue of openVsxIssues(manifest)) problems.push(`Open VSX: ${issue}`);
for (const issue of marketplaceIssues(manifest)) problems.push(`Marketplace: ${issue}`);

const required = ["extension/package.json", "extension/readme.md", "extension/changelog.md", "extension/LICENSE.txt", `extension/${manifest.icon}`, `extension/${manifest.main.replace(/^\.\//, "")}`];
for (const name of required) {
  if (!entries.has(name)) problems.push(`the vsix lacks ${name}`);
}
for (const name of entries.keys()) {
  if (/\.map$|\.tsx?$|(^|\/)node_modules\/|^extension\/(src|test|e2e|scripts|webview)\//.test(name)) {
    problems.push(`the vsix should not carry ${name}`);
  }
}

// The icon: a PNG of at least 128x128 (its IHDR chunk holds width and height).
const icon = entries.get(`extension/${manifest.icon}`);
if (icon) {
  const isPng = icon.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  const [width, height] = isPng ? [icon.readUInt32BE(16), icon.readUInt32BE(20)] : [0, 0];
  if (!isPng || width < 128 || height < 128) problems.push(`the icon must be a PNG of at least 128x128, is ${isPng ? `${width}x${height}` : "not a PNG"}`);
}

// Links: [text](url) and ![alt](url), as vsce rewrote them.
for (const name of ["extension/readme.md", "extension/changelog.md"]) {
  const text = entries.get(name)?.toString("utf8") ?? "";
  for (const [, bang, url] of text.matchAll(/(!?)\[[^\]]*\]\(([^)\s]+)\)/g)) {
    const isImage = bang === "!";
    let parsed;
    try {
      parsed = new URL(url);
    } catch {
      problems.push(`${name}: a relative link vsce did not rewrite: ${url}`);
      continue;
    }
    if (isImage && parsed.protocol !== "https:") problems.push(`${name}: an image not over https: ${url}`);
    if (/(^|\/)\.\.(\/|$)/.test(url)) problems.push(`${name}: a link with '..' in it: ${url}`);
    // A file of the repository, as vsce writes it: <repository>/raw/HEAD/<path> or /blob/HEAD/<path>.
    if (!parsed.href.startsWith(`${REPOSITORY_URL}/raw/`) && !parsed.href.startsWith(`${REPOSITORY_URL}/blob/`)) continue;
    const file = /^\/[^/]+\/[^/]+\/(?:raw|blob)\/HEAD\/(.+)$/.exec(parsed.pathname)?.[1];
    if (file === undefined) problems.push(`${name}: ${url} is not a file at HEAD of the repository`);
    else if (!existsSync(path.join(repositoryRoot, decodeURIComponent(file)))) {
      problems.push(`${name}: ${url} names ${file}, which is not in the repository`);
    }
  }
}

console.log(`${path.basename(vsix)}: ${sizeKB.toFixed(1)} KB of ${VSIX_BUDGET_KB} KB, ${entries.size} entries`);
if (problems.length > 0) {
  for (const problem of problems) console.error(`check-vsix: ${problem}`);
  process.exit(1);
}
