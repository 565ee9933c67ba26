// Packages fx-lsp.vsix with vsce and fails when vsce warns. vsce prints a warning (a missing
// LICENSE or repository, '*' activation, too many files...) and then asks "Do you want to
// continue?"; when its output is not a terminal, as in CI, it answers yes by itself, so a
// warning would never stop a build. Its output is captured here, printed, and searched for the
// warning prefix it uses (" WARNING ", or "::warning" under GitHub Actions).
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const OUTPUT = "fx-lsp.vsix";
const vsce = fileURLToPath(new URL("../node_modules/@vscode/vsce/vsce", import.meta.url));

// README and CHANGELOG links are relative to the repository root (`/docs/...`), which GitHub
// renders as such and vsce turns into https URLs from package.json's repository.
const run = spawnSync(process.execPath, [vsce, "package", "--no-dependencies", "-o", OUTPUT], {
  encoding: "utf8",
  stdio: ["ignore", "pipe", "pipe"],
});
process.stdout.write(run.stdout);
process.stderr.write(run.stderr);
if (run.error) throw run.error;

/** vsce's warning lines, without colour codes. */
function vsceWarnings(output) {
  const plain = output.replace(/\x1b\[[0-9;]*m/g, "");
  return plain.split("\n").filter((line) => /^ ?WARNING /.test(line) || /^::warning/.test(line));
}

const warnings = vsceWarnings(`${run.stdout}\n${run.stderr}`);
if (run.status !== 0) {
  console.error(`package.mjs: vsce exited with ${run.status}`);
  process.exit(1);
}
if (warnings.length > 0) {
  console.error(`package.mjs: vsce warned (${warnings.length}); fix these rather than answer its prompts:`);
  for (const line of warnings) console.error(`  ${line}`);
  process.exit(1);
}
