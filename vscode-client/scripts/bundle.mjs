// Bundles the extension and vscode-languageclient into one CommonJS file (dist/extension.js),
// so the vsix ships no node_modules; and the graph view's browser code with dagre into one
// script (dist/graph.js), which the webview loads and which `fx-lsp graph` inlines into its
// HTML file: the Python package keeps a copy (fx_lsp/assets/graph.js) that
// `node scripts/bundle.mjs --check` compares with a fresh build.
import * as esbuild from "esbuild";
import { readFileSync, writeFileSync } from "node:fs";

const minify = process.argv.includes("--minify");
const PYTHON_COPY = "../fx_lsp/assets/graph.js";

await esbuild.build({
  entryPoints: ["src/extension.ts"],
  bundle: true,
  outfile: "dist/extension.js",
  platform: "node",
  format: "cjs",
  target: "node20",
  external: ["vscode"],
  sourcemap: true,
  minify,
  logLevel: "info",
});

const graph = await esbuild.build({
  entryPoints: ["webview/graphMain.ts"],
  bundle: true,
  write: false,
  platform: "browser",
  format: "iife",
  target: "es2020",
  minify: true, // always: the same bytes in the vsix, the webview and the Python package
  legalComments: "eof",
  logLevel: "info",
});
const code = graph.outputFiles[0].text;
writeFileSync("dist/graph.js", code);
if (process.argv.includes("--check")) {
  if (readFileSync(PYTHON_COPY, "utf8") !== code) {
    console.error(`${PYTHON_COPY} differs from a fresh build of webview/: run node scripts/bundle.mjs and commit it`);
    process.exit(1);
  }
} else {
  writeFileSync(PYTHON_COPY, code);
}
