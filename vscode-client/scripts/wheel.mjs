// Builds the fx-lsp wheel from the repository and puts it in bundled/, which the vsix carries, so
// that the extension can install its own server (src/serverInstall.ts). Run by `vsce package`
// (vscode:prepublish). The build runs on a copy of the files git knows (tracked, and new ones that
// are not ignored), as in a fresh clone with the working changes: setuptools' build/ folder in the
// repository could otherwise slip files deleted since into the wheel. The wheel's version must
// be the extension's: the extension offers it when the server reports another one.
//
// FX_LSP_BUILD_PYTHON: the Python that builds it (default python3); `pip wheel` builds in an
// isolated environment, fetching the build backend from the package index.
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const clientDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const repoDir = path.resolve(clientDir, "..");
const bundledDir = path.join(clientDir, "bundled");
const python = process.env.FX_LSP_BUILD_PYTHON ?? "python3";
const version = JSON.parse(fs.readFileSync(path.join(clientDir, "package.json"), "utf8")).version;
const wheelName = `fx_lsp-${version}-py3-none-any.whl`;

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "fx-lsp-wheel-"));
try {
  const source = path.join(scratch, "source");
  const listed = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], {
    cwd: repoDir,
    encoding: "utf8",
    maxBuffer: 64 * 1024 * 1024,
  });
  for (const file of listed.split("\0")) {
    // A tracked file deleted in the working tree is gone from the build too.
    if (file === "" || !fs.existsSync(path.join(repoDir, file))) continue;
    fs.mkdirSync(path.dirname(path.join(source, file)), { recursive: true });
    fs.copyFileSync(path.join(repoDir, file), path.join(source, file));
  }
  const out = path.join(scratch, "out");
  execFileSync(python, ["-m", "pip", "wheel", "--no-deps", "--disable-pip-version-check", "--quiet", "-w", out, source], {
    stdio: "inherit",
  });
  const built = fs.readdirSync(out).filter((name) => name.endsWith(".whl"));
  if (built.length !== 1 || built[0] !== wheelName) {
    console.error(
      `wheel.mjs: built ${JSON.stringify(built)}, expected ${wheelName}: pyproject.toml and ` +
        `vscode-client/package.json must carry the same version`,
    );
    process.exit(1);
  }
  fs.rmSync(bundledDir, { recursive: true, force: true });
  fs.mkdirSync(bundledDir);
  fs.copyFileSync(path.join(out, wheelName), path.join(bundledDir, wheelName));
  console.log(`bundled/${wheelName} (${fs.statSync(path.join(bundledDir, wheelName)).size} bytes)`);
} finally {
  fs.rmSync(scratch, { recursive: true, force: true });
}
