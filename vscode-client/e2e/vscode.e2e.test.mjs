// End-to-end test in a real VS Code: code-server with the freshly built fx-lsp.vsix installed,
// driven through Debian's headless Chromium with playwright-core. It asserts what a person sees:
// squiggles, Problems entries, hovers, a quick fix applied with Ctrl+., the generated-code view,
// the graph view, the language status item, Trace Workspace and its cancellation, restarts, live settings,
// Restricted Mode turning into tracing when the workspace is trusted, and the extension installing
// its own server (the wheel in the vsix) into an interpreter that lacks it.
//
// Environment (all optional):
//   CODE_SERVER      code-server binary (default: the one scripts/ci.sh installs)
//   FX_LSP_PYTHON    interpreter with fx-lsp installed (default: python3's sys.executable)
//   FX_LSP_VSIX      the packaged extension (default: ../fx-lsp.vsix)
//   FX_LSP_E2E_TOOLS where the venv with only torch is kept between runs (default: the folder
//                    scripts/ci.sh installs code-server into, ~/.cache/fx-lsp-e2e)
//   CHROMIUM         browser binary (default: /usr/bin/chromium)
//   ARTIFACTS_DIR    where the screenshots go (default: <repo>/test-artifacts/vscode)
//   E2E_KEEP_RUN=1   keep the scratch folder (settings, logs) after the run
//   E2E_LOG_LEVEL    code-server's --log level, e.g. trace to log the LSP messages too
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = path.dirname(fileURLToPath(import.meta.url));
const clientDir = path.resolve(here, "..");
const repoDir = path.resolve(clientDir, "..");
const CODE_SERVER =
  process.env.CODE_SERVER ??
  path.join(os.homedir(), ".cache", "fx-lsp-e2e", "code-server-4.100.3", "node_modules", ".bin", "code-server");
const VSIX = process.env.FX_LSP_VSIX ?? path.join(clientDir, "fx-lsp.vsix");
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";
const ARTIFACTS = process.env.ARTIFACTS_DIR ?? path.join(repoDir, "test-artifacts", "vscode");
const TOOLS = process.env.FX_LSP_E2E_TOOLS ?? path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), ".cache"), "fx-lsp-e2e");
/** The version of the extension, which is the version of the wheel it carries. */
const EXTENSION_VERSION = JSON.parse(fs.readFileSync(path.join(clientDir, "package.json"), "utf8")).version;
/** The torch of the venv that lacks fx-lsp: a pinned release (this machine has its file). */
const TORCH_REQUIREMENT = "torch==2.13.0";
const PYTHON =
  process.env.FX_LSP_PYTHON ??
  execFileSync("python3", ["-c", "import sys; print(sys.executable)"], { encoding: "utf8" }).trim();

/** The first trace of a run imports torch in the server's fork server: allow for a cold machine. */
const TRACE_TIMEOUT_MS = 120_000;
/** pip fetches the wheel's dependencies (pygls, libcst, ...) from the package index, then a first trace. */
const INSTALL_TIMEOUT_MS = 300_000;
const UI_TIMEOUT_MS = 30_000;
/** For a read polled by `waitFor`: a locator otherwise waits up to 30 s for a missing element,
 * which can spend the whole of a poll's deadline on one read of a re-rendering view. */
const READ = { timeout: 2_000 };

/** The model of the capture-modes step: a data-dependent branch, and a clean head. */
const PT2_MODEL = `import torch
from torch import nn


class Gated(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        y = self.proj(x)
        if y.abs().mean() > 1.0:
            y = y / 2
        return y


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.fc2(torch.nn.functional.gelu(self.fc1(x)))
`;

const run = {
  dir: "",
  workspace: "",
  /** Process group of code-server (it is started in its own session with setsid semantics). */
  serverPid: 0,
  browser: undefined,
  page: undefined,
};

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function waitFor(condition, what, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  let lastError;
  while (Date.now() < deadline) {
    try {
      const value = await condition();
      if (value) return value;
    } catch (error) {
      lastError = error;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${lastError ? `: ${lastError}` : ""}`);
}

async function screenshot(name) {
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const file = path.join(ARTIFACTS, `${name}.png`);
  await run.page.screenshot({ path: file });
  return file;
}

function codeServerArgs() {
  return [
    "--config", path.join(run.dir, "config.yaml"),
    "--user-data-dir", path.join(run.dir, "ud"),
    "--extensions-dir", path.join(run.dir, "ext"),
  ];
}

/** The environment of code-server (and so of the extension and its Pythons), without `withoutEnv`. */
function scratchEnv(withoutEnv = []) {
  const env = {
    ...process.env,
    XDG_DATA_HOME: path.join(run.dir, "xdg", "data"),
    XDG_CACHE_HOME: path.join(run.dir, "xdg", "cache"),
    XDG_CONFIG_HOME: path.join(run.dir, "xdg", "config"),
  };
  for (const name of withoutEnv) delete env[name];
  return env;
}

// ----- A Python that lacks fx-lsp: a venv with only torch, kept under TOOLS, copied for each run

/** For running a venv's Python from the test: no PYTHONPATH (it could lend fx_lsp), a neutral folder. */
function isolatedPythonOptions(cwd) {
  const env = { ...process.env, PYTHONSAFEPATH: "1" };
  delete env.PYTHONPATH;
  return { cwd, env, encoding: "utf8" };
}

/** What `python` has of fx-lsp: its distribution's version and where `fx_lsp` is, or null. */
function fxLspIn(python, cwd) {
  const script = [
    "import importlib.metadata, importlib.util, json",
    "spec = importlib.util.find_spec('fx_lsp')",
    "try:",
    "    version = importlib.metadata.version('fx-lsp')",
    "except importlib.metadata.PackageNotFoundError:",
    "    version = None",
    "print(json.dumps(None if spec is None and version is None else {'version': version, 'origin': spec and spec.origin}))",
  ].join("\n");
  return JSON.parse(execFileSync(python, ["-c", script], isolatedPythonOptions(cwd)).trim());
}

/**
 * A venv with torch and its dependencies and nothing else, made once (about half a minute: the
 * torch wheel is a local file) and kept under TOOLS; it is moved into place only once complete.
 */
function torchVenvTemplate() {
  const pythonVersion = execFileSync(PYTHON, ["-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"], { encoding: "utf8" }).trim();
  const template = path.join(TOOLS, `venv-${TORCH_REQUIREMENT.replace("==", "-")}-py${pythonVersion}`);
  if (fs.existsSync(path.join(template, "bin", "python"))) return template;
  fs.mkdirSync(TOOLS, { recursive: true });
  const scratch = fs.mkdtempSync(path.join(TOOLS, ".venv-torch-"));
  execFileSync(PYTHON, ["-m", "venv", scratch], { stdio: "inherit" });
  execFileSync(path.join(scratch, "bin", "python"), ["-m", "pip", "install", "--disable-pip-version-check", TORCH_REQUIREMENT], {
    ...isolatedPythonOptions(TOOLS),
    stdio: "inherit",
  });
  assert.equal(fxLspIn(path.join(scratch, "bin", "python"), TOOLS), null, "the torch venv has no fx-lsp");
  try {
    fs.renameSync(scratch, template);
  } catch (error) {
    // Another run made it meanwhile.
    fs.rmSync(scratch, { recursive: true, force: true });
    if (!fs.existsSync(path.join(template, "bin", "python"))) throw error;
  }
  return template;
}

/**
 * A copy of the torch venv for one run, as hard links (a second and no space; pip replaces files
 * by unlinking them first, so the template is never written through). Its `bin/python` finds its
 * own pyvenv.cfg, so it is a venv of its own; `bin/pip`'s first line still names the template, so
 * everything runs `python -m pip`.
 */
function freshTorchVenv() {
  const template = torchVenvTemplate();
  const runs = path.join(TOOLS, "venv-runs");
  fs.mkdirSync(runs, { recursive: true });
  const venv = path.join(fs.mkdtempSync(path.join(runs, "run-")), "venv");
  try {
    execFileSync("cp", ["-al", template, venv]);
  } catch {
    fs.rmSync(venv, { recursive: true, force: true });
    execFileSync("cp", ["-a", template, venv]);
  }
  assert.equal(fxLspIn(path.join(venv, "bin", "python"), runs), null, "the venv has no fx-lsp before the step");
  return venv;
}

/** Files under `dir` (recursively) whose name matches `pattern`. */
function filesUnder(dir, pattern) {
  if (!fs.existsSync(dir)) return [];
  return fs
    .readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && pattern.test(entry.name))
    .map((entry) => path.join(entry.parentPath ?? entry.path, entry.name));
}

/** The newest file called `name` under the run's logs (one log folder per window load). */
function findLog(name) {
  const found = filesUnder(path.join(run.dir, "ud", "logs"), new RegExp(`^${name.replace(/\./g, "\\.")}$`));
  assert.ok(found.length > 0, `no ${name} under the logs`);
  return found.sort().at(-1);
}

/** The FX Trace log and code-server's own logs, printed when a step fails. */
function dumpLogs() {
  const found = [
    ...filesUnder(path.join(run.dir, "ud"), /FX Trace|exthost\.log|remoteagent\.log/),
    ...filesUnder(path.join(run.dir, "xdg"), /\.log$/),
    path.join(run.dir, "code-server.log"),
  ];
  for (const file of found) {
    if (!fs.existsSync(file)) continue;
    const text = fs.readFileSync(file, "utf8");
    console.log(`----- ${file} (last 4000 chars)\n${text.slice(-4000)}`);
  }
}

// ----- Editor helpers (selectors of VS Code 1.100 as served by code-server 4.100.3)

/** The editor of the active editor group (a second group opens beside for generated code). */
const activeEditor = () => run.page.locator(".editor-group-container.active .editor-instance .monaco-editor").first();

const editorText = () =>
  activeEditor().locator(".view-lines").innerText(READ).then((t) => t.replace(/\u00a0/g, " "));

/** The active tab of the active editor group, if its title holds `title`. */
const activeTab = (title) => run.page.locator(".editor-group-container.active .tabs-container .tab.active", { hasText: title });

/** Click the active editor's code lens titled `lens`, and wait for the tab `title` it opens. */
async function openFromCodeLens(lens, title) {
  await activeEditor().locator(".codelens-decoration a", { hasText: lens }).first().click();
  await activeTab(title).waitFor({ timeout: UI_TIMEOUT_MS });
}

async function openFile(name) {
  const { page } = run;
  // A double click in the Explorer, not Quick Open: a keyboard shortcut is lost whenever the
  // workbench has moved the focus somewhere odd (a closed group, a toast), a click never is.
  await waitFor(
    async () => {
      await page.keyboard.press("Escape");
      await page.locator(".explorer-folders-view .monaco-list-row", { hasText: name }).first().dblclick({ timeout: 5000 });
      await activeTab(name).waitFor({ timeout: 5000 });
      return true;
    },
    `${name} to open`,
    UI_TIMEOUT_MS,
  );
  await waitFor(async () => (await editorText()).includes("class "), `the text of ${name}`, UI_TIMEOUT_MS);
}

const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The token span of the active editor whose whole text is `text` on the line that contains `lineText`. */
function token(text, lineText) {
  return activeEditor()
    .locator(".view-line", { hasText: lineText })
    .first()
    .locator("span > span", { hasText: new RegExp(`^${escapeRegExp(text)}$`) })
    .first();
}

/**
 * The 1-based editor line of an element inside the editor's text: the line number rendered at the
 * same `top` as the overlay line holding it, read in one go so that a code lens that shifts the
 * lines cannot come in between.
 */
async function lineOf(locator) {
  return locator.evaluate((element) => {
    let line = element;
    while (line.parentElement && !line.parentElement.classList.contains("view-overlays")) line = line.parentElement;
    const editor = element.closest(".monaco-editor");
    if (!line.parentElement || !editor) throw new Error("the element is not in an editor's overlay layer");
    for (const margin of editor.querySelectorAll(".margin-view-overlays > div")) {
      const number = margin.querySelector(".line-numbers");
      if (number && margin.style.top === line.style.top) return Number(number.textContent.trim());
    }
    throw new Error(`no line number at top ${line.style.top}`);
  });
}

async function problemRows() {
  // The aria-label holds the message and position, the rendered text the source and code.
  // Read in one evaluation: the list re-renders as diagnostics change, and a row read one by one
  // can vanish between the count and the read (a locator would then wait out its own timeout).
  return run.page
    .locator(".markers-panel .monaco-list-row")
    .evaluateAll((rows) => rows.map((row) => `${row.getAttribute("aria-label") ?? ""} ${row.innerText}`));
}

async function showProblems() {
  const { page } = run;
  if (!(await page.locator(".markers-panel").isVisible())) await page.keyboard.press("Control+Shift+M");
  await page.locator(".markers-panel").waitFor({ state: "visible", timeout: UI_TIMEOUT_MS });
}

async function hoverText(locator, expected, timeoutMs) {
  const { page } = run;
  return waitFor(
    async () => {
      await page.mouse.move(5, 5);
      const box = await locator.boundingBox();
      if (!box) return false;
      // Two moves a few pixels apart: Monaco starts its hover on mouse movement over the token.
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      await page.mouse.move(box.x + box.width / 2 + 2, box.y + box.height / 2);
      const hover = page.locator(".monaco-hover:not(.hidden) .monaco-hover-content", { hasText: expected });
      try {
        await hover.first().waitFor({ state: "visible", timeout: 3000 });
      } catch {
        return false;
      }
      return (await hover.allInnerTexts()).join("\n");
    },
    `a hover matching ${expected}`,
    timeoutMs,
  );
}

async function runCommand(title) {
  const { page } = run;
  const input = page.locator(".quick-input-widget input");
  // F1 first; if the workbench lost that key (focus somewhere odd), a click on the command center
  // in the title bar opens the same quick input without moving the editor's cursor.
  await waitFor(
    async () => {
      await page.keyboard.press("F1");
      try {
        await input.waitFor({ state: "visible", timeout: 3000 });
      } catch {
        await page.locator(".command-center-center").click({ timeout: 3000 });
        await input.waitFor({ state: "visible", timeout: 3000 });
      }
      return true;
    },
    "the command palette",
    UI_TIMEOUT_MS,
  );
  await input.fill(`>${title}`);
  await page.locator(".quick-input-list .monaco-list-row", { hasText: title }).first().waitFor({ timeout: UI_TIMEOUT_MS });
  await page.keyboard.press("Enter");
}

// ----- The run

const BASE_USER_SETTINGS = {
  "telemetry.telemetryLevel": "off",
  "workbench.startupEditor": "none",
  "update.mode": "none",
  "extensions.autoUpdate": false,
  "extensions.ignoreRecommendations": true,
  "workbench.tips.enabled": false,
  "editor.hover.delay": 200,
  "files.autoSave": "off",
};

/**
 * Starts code-server on a copy of the fixture workspace with the vsix installed and opens it in
 * Chromium. `trust: false` runs it with Workspace Trust on, so that the folder opens restricted.
 */
async function launchVSCode({ trust, userSettings, workspaceSettings, withoutEnv = [] }) {
  for (const [what, file] of [["code-server", CODE_SERVER], ["the vsix", VSIX], ["chromium", CHROMIUM], ["python", PYTHON]]) {
    assert.ok(fs.existsSync(file), `${what} not found at ${file}`);
  }
  run.dir = fs.mkdtempSync(path.join(os.tmpdir(), "fx-lsp-e2e-"));
  run.workspace = path.join(run.dir, "workspace");
  // A copy: the quick fix edits the files.
  fs.cpSync(path.join(here, "workspace"), run.workspace, { recursive: true });
  fs.mkdirSync(path.join(run.workspace, ".vscode"));
  fs.writeFileSync(path.join(run.workspace, ".vscode", "settings.json"), JSON.stringify(workspaceSettings, null, 2));
  fs.mkdirSync(path.join(run.dir, "ud", "User"), { recursive: true });
  fs.writeFileSync(
    path.join(run.dir, "ud", "User", "settings.json"),
    JSON.stringify({ ...BASE_USER_SETTINGS, ...userSettings }, null, 2),
  );
  const port = await freePort();
  fs.writeFileSync(path.join(run.dir, "config.yaml"), `bind-addr: 127.0.0.1:${port}\nauth: none\ncert: false\n`);

  execFileSync(CODE_SERVER, [...codeServerArgs(), "--install-extension", VSIX], { env: scratchEnv(withoutEnv), stdio: "inherit" });

  const logFd = fs.openSync(path.join(run.dir, "code-server.log"), "w");
  const server = spawn(
    CODE_SERVER,
    [
      ...codeServerArgs(),
      "--auth", "none",
      "--bind-addr", `127.0.0.1:${port}`,
      "--disable-telemetry",
      "--disable-update-check",
      ...(trust ? ["--disable-workspace-trust"] : []),
      "--disable-getting-started-override",
      ...(process.env.E2E_LOG_LEVEL ? ["--log", process.env.E2E_LOG_LEVEL] : []),
      run.workspace,
    ],
    // detached: its own process group, so that its file watcher and extension host die with it.
    { env: scratchEnv(withoutEnv), detached: true, stdio: ["ignore", logFd, logFd] },
  );
  run.serverPid = server.pid;
  await waitFor(
    async () => (await fetch(`http://127.0.0.1:${port}/healthz`)).ok,
    "code-server's /healthz",
    60_000,
  );

  run.browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync"],
    env: { ...process.env, XDG_CONFIG_HOME: path.join(run.dir, "chromium", "config"), XDG_CACHE_HOME: path.join(run.dir, "chromium", "cache") },
  });
  run.page = await run.browser.newPage({ viewport: { width: 1440, height: 900 } });
  await run.page.goto(`http://127.0.0.1:${port}/?folder=${encodeURIComponent(run.workspace)}`);
  await run.page.locator(".monaco-workbench").waitFor({ timeout: 60_000 });
  await run.page.locator(".explorer-folders-view .monaco-list-row").first().waitFor({ timeout: 60_000 });
}

async function shutdownVSCode() {
  await run.browser?.close();
  run.browser = undefined;
  run.page = undefined;
  if (run.serverPid) {
    try {
      process.kill(-run.serverPid, "SIGTERM");
    } catch {
      // already gone
    }
    run.serverPid = 0;
  }
  if (run.dir && process.env.E2E_KEEP_RUN !== "1") fs.rmSync(run.dir, { recursive: true, force: true });
  else if (run.dir) console.log(`kept the run folder ${run.dir}`);
  run.dir = "";
}

/** Runs a step; on failure saves a screenshot and prints the logs before failing. */
/** Close an editor tab by its close button, and wait until it is gone. */
async function closeTab(label) {
  const tab = run.page.locator(".tabs-container .tab", { hasText: label }).first();
  await tab.hover();
  await tab.locator(".tab-actions .action-label").click();
  await tab.waitFor({ state: "detached", timeout: UI_TIMEOUT_MS });
}

const oneEditorGroup = () =>
  waitFor(async () => (await run.page.locator(".editor-group-container").count()) === 1, "one editor group", UI_TIMEOUT_MS);

async function step(name, body) {
  try {
    await body();
  } catch (error) {
    if (run.page) await screenshot(`failed-${name}`).catch(() => undefined);
    dumpLogs();
    throw error;
  }
}

describe("fx-lsp in VS Code (code-server), trusted workspace", () => {
  before(() =>
    launchVSCode({
      trust: true,
      userSettings: {},
      workspaceSettings: { "fxLsp.interpreter": PYTHON, "fxLsp.trace.server": "messages" },
    }),
  );
  after(shutdownVSCode);

  it("reports len() on a tensor as FX002: squiggle on the line and a Problems entry", () =>
    step("01-len-diagnostic", async () => {
      await openFile("len_model.py");
      const squiggle = activeEditor().locator(".squiggly-error").first();
      await squiggle.waitFor({ state: "attached", timeout: TRACE_TIMEOUT_MS });
      assert.equal(await lineOf(squiggle), 11, "the squiggle is on `batch = len(x)`");
      await showProblems();
      const fx002 = await waitFor(
        async () => (await problemRows()).find((label) => /FX002/.test(label)),
        "a Problems entry with FX002",
        UI_TIMEOUT_MS,
      );
      assert.match(fx002, /Ln 11, Col 17/, `the entry is on line 11: ${fx002}`);
      assert.match(fx002, /fx-lsp/);
      await screenshot("01-len-diagnostic");
    }));

  it("explains the failure in a hover on the failing expression (the README screenshot)", () =>
    step("01b-failure-hover", async () => {
      await openFile("len_model.py");
      await showProblems();
      const text = await hoverText(token("len", "batch = len(x)"), /len\(\)/, UI_TIMEOUT_MS);
      assert.match(text, /FX002/);
      await screenshot("readme-vscode");
    }));

  it("shows the server's state in the language status item and links to the log", () =>
    step("01c-language-status", async () => {
      const { page } = run;
      await page.mouse.move(5, 5);
      await page.keyboard.press("Escape");
      await page.locator('[id="status.languageStatus"]').click();
      const status = page.locator(".monaco-hover:not(.hidden)", { hasText: "FX: " });
      await status.first().waitFor({ state: "visible", timeout: UI_TIMEOUT_MS });
      assert.match(await status.first().innerText(), /FX: idle/);
      await screenshot("01c-language-status");
      await status.first().getByText("Show Log").click();
      await page.locator(".output-view, .panel .monaco-editor", { hasText: "The server is running" }).first().waitFor({ timeout: UI_TIMEOUT_MS });
      await screenshot("01c-log");
      // The status hover stays until something else takes the focus.
      await page.keyboard.press("Escape");
      await activeEditor().locator(".view-lines").click();
      await status.first().waitFor({ state: "hidden", timeout: UI_TIMEOUT_MS });
    }));

  it("reports control flow on a tensor as FX001", () =>
    step("02-control-flow", async () => {
      await openFile("control_flow.py");
      const squiggle = activeEditor().locator(".squiggly-error").first();
      await squiggle.waitFor({ state: "attached", timeout: TRACE_TIMEOUT_MS });
      assert.equal(await lineOf(squiggle), 11, "the squiggle is on `if x.sum() > 0:`");
      await showProblems();
      const fx001 = await waitFor(
        async () => (await problemRows()).find((label) => /FX001/.test(label)),
        "a Problems entry with FX001",
        UI_TIMEOUT_MS,
      );
      assert.match(fx001, /Ln 11, Col 12/, fx001);
      await screenshot("02-control-flow");
    }));

  it("shows the generated forward in the hover of a traceable class", () =>
    step("03-hover", async () => {
      await openFile("traceable.py");
      const text = await hoverText(token("TinyMLP", "class TinyMLP"), /def forward/, TRACE_TIMEOUT_MS);
      assert.match(text, /def forward\(self, x/);
      await screenshot("03-hover-traceable");
    }));

  it("shows the tensor shape each line produces as an inlay hint at the end of the line", () =>
    step("03b-shape-hints", async () => {
      await openFile("traceable.py");
      // The editor renders the hint's spaces as no-break spaces.
      const lineText = async (text) =>
        (await activeEditor().locator(".view-line", { hasText: text }).first().innerText(READ)).replace(/\u00a0/g, " ");
      await waitFor(
        async () => (await lineText("hidden = torch.relu")).includes("[2, 8, 16]"),
        "the shape hint after `hidden = ...`",
        TRACE_TIMEOUT_MS,
      );
      assert.match(await lineText("return self.fc2"), /return self\.fc2\(hidden\)\s*\[2, 8, 4\]\s*$/);
      await screenshot("03b-shape-hints");
    }));

  it("marks shapes that do not fit as an FX300 warning on the user's line", () =>
    step("03c-shape-error", async () => {
      await openFile("shape_error.py");
      const squiggle = activeEditor().locator(".squiggly-warning").first();
      await squiggle.waitFor({ state: "attached", timeout: TRACE_TIMEOUT_MS });
      assert.equal(await lineOf(squiggle), 13, "the squiggle is on `return self.b(h)`");
      await showProblems();
      const fx300 = await waitFor(
        async () => (await problemRows()).find((label) => /FX300/.test(label)),
        "a Problems entry with FX300",
        UI_TIMEOUT_MS,
      );
      assert.match(fx300, /Shapes do not fit: `self\.b` \(Linear\) on float32\[2, 8, 16\]/, fx300);
      await screenshot("03c-shape-error");
      await openFile("traceable.py"); // the steps below work on it

    }));

  it("opens the generated code of the class at the cursor in a read-only python document", () =>
    step("04-generated-code", async () => {
      const { page } = run;
      await page.mouse.move(5, 5);
      await token("TinyMLP", "class TinyMLP").click();
      await runCommand("FX: Show Generated Forward Code");
      await activeTab("TinyMLP.fx.py").waitFor({ timeout: UI_TIMEOUT_MS });
      const shown = await waitFor(
        async () => {
          const text = await editorText();
          return /def forward/.test(text) ? text : false;
        },
        "the generated forward in the view",
        UI_TIMEOUT_MS,
      );
      assert.match(shown, /torch\.fx generated forward of/);
      assert.match(shown, /def forward\(self, x/);
      assert.match(shown, /fc1/);
      // The status bar names the language of the active editor.
      assert.equal((await page.locator('[id="status.editor.mode"]').innerText()).trim(), "Python");
      await screenshot("04-generated-code");
      // Read-only: typing into it changes nothing.
      await activeEditor().locator(".view-lines").click();
      await page.keyboard.type("zzz");
      assert.doesNotMatch(await editorText(), /zzz/);
      await page.keyboard.press("Control+W");
      await waitFor(async () => (await page.locator(".editor-group-container").count()) === 1, "the view's group to close", UI_TIMEOUT_MS);
    }));

  it("opens the generated code from the code lens and refreshes it when the class is traced again", () =>
    step("04a-generated-code-refresh", async () => {
      const { page } = run;
      await openFile("traceable.py");
      await openFromCodeLens("FX: traceable", "TinyMLP.fx.py");
      await waitFor(async () => /def forward/.test(await editorText()), "the generated forward", UI_TIMEOUT_MS);
      assert.doesNotMatch(await editorText(), /mul/);
      // Edit the class in the first group and save: the view beside follows the new trace.
      await page.keyboard.press("Control+1");
      await activeEditor().locator(".view-line", { hasText: "hidden = torch.relu" }).click();
      await page.keyboard.press("End");
      await page.keyboard.press("Enter");
      await page.keyboard.type("hidden = hidden * 2");
      await page.keyboard.press("Control+S");
      const generatedView = page.locator(".editor-group-container:not(.active) .editor-instance .monaco-editor .view-lines");
      await waitFor(async () => /mul/.test(await generatedView.innerText(READ)), "the view to show the new mul node", TRACE_TIMEOUT_MS);
      await screenshot("04a-generated-code-refreshed");
      await page.keyboard.press("Control+2");
      await page.keyboard.press("Control+W");
      await waitFor(async () => (await page.locator(".editor-group-container").count()) === 1, "the view's group to close", UI_TIMEOUT_MS);
    }));

  it("opens the graph view from the code lens, reveals a clicked node's line and follows an edit", () =>
    step("04d-graph-view", async () => {
      const { page } = run;
      await openFile("traceable.py");
      await openFromCodeLens("Show graph", "Graph: TinyMLP");
      // The webview's document sits in an iframe inside code-server's webview iframe.
      const view = page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
      await view.locator('.fx-item[data-name="fc2"]').waitFor({ timeout: UI_TIMEOUT_MS });
      assert.match(await view.locator(".fx-toolbar").innerText(), /traceable:TinyMLP[\s\S]*traceable/);
      assert.match(await view.locator('.fx-item[data-name="fc1"]').textContent(), /fc1[\s\S]*float32\[2, 8, 16\]/);
      await screenshot("04d-graph-view");

      // A click on a node selects its source line in the editor.
      const source = fs.readFileSync(path.join(run.workspace, "traceable.py"), "utf8").split("\n");
      const fc2Line = source.findIndex((line) => line.includes("return self.fc2(hidden)")) + 1;
      await view.locator('.fx-item[data-name="fc2"]').click();
      const selection = page.locator('[id="status.editor.selection"]');
      await waitFor(async () => new RegExp(`Ln ${fc2Line},`).test(await selection.innerText(READ)), `the selection on line ${fc2Line}`, UI_TIMEOUT_MS);
      await view.locator(".fx-details button", { hasText: "Copy node name" }).click();
      await page.locator(".statusbar", { hasText: "copied node name fc2" }).waitFor({ timeout: UI_TIMEOUT_MS });

      // Edit the class and save: the view follows the new trace. (A click into the source's
      // group: a key press may stay in the webview, which has the focus after the button.)
      const sourceEditor = page.locator(".editor-group-container").first().locator(".editor-instance .monaco-editor").first();
      await sourceEditor.locator(".view-line", { hasText: "hidden = torch.relu" }).click();
      await page.keyboard.press("End");
      await page.keyboard.press("Enter");
      await page.keyboard.type("hidden = hidden.sigmoid()");
      await page.keyboard.press("Control+S");
      await view.locator('.fx-item[data-name="sigmoid"]').waitFor({ timeout: TRACE_TIMEOUT_MS });
      // The cursor on a line of forward highlights that line's nodes.
      await sourceEditor.locator(".view-line", { hasText: "hidden.sigmoid()" }).click();
      await view.locator('.fx-item.highlighted[data-name="sigmoid"]').waitFor({ timeout: UI_TIMEOUT_MS });
      await screenshot("04d-graph-view-followed");
      await closeTab("Graph: TinyMLP");
      await oneEditorGroup();

      // The generated-code view's title bar has a button that opens the graph too.
      await openFromCodeLens("FX: traceable", "TinyMLP.fx.py");
      await page.locator('.editor-group-container.active .editor-actions [aria-label="Show Graph"]').click();
      await page
        .locator(".editor-group-container .tabs-container .tab.active", { hasText: "Graph: TinyMLP" })
        .waitFor({ timeout: UI_TIMEOUT_MS });
      await view.locator('.fx-item[data-name="sigmoid"]').waitFor({ timeout: UI_TIMEOUT_MS });
      await closeTab("Graph: TinyMLP");
      await closeTab("TinyMLP.fx.py");
      await oneEditorGroup();
    }));

  it("shows hostile submodule names in the graph webview as text: no element, no script", () =>
    step("04e-graph-view-hostile-names", async () => {
      const { page } = run;
      // Single quotes: a double quote in a submodule name breaks torch.fx's own code
      // generation (plain torch.fx fails the same; fx-lsp reports FX199 at the class).
      const hostile = `</script><img src=x onerror='pwned=1'><b>bold</b>`;
      const modelFile = path.join(run.workspace, "hostile_names.py");
      fs.writeFileSync(
        modelFile,
        "import torch\nfrom torch import nn\n\n" +
          `HOSTILE = ${JSON.stringify(hostile)}\n\n\n` +
          "class Hostile(nn.Module):\n" +
          "    def __init__(self):\n        super().__init__()\n        self.add_module(HOSTILE, nn.Linear(16, 16))\n\n" +
          "    def forward(self, x):\n        return getattr(self, HOSTILE)(x).relu()\n",
      );
      // Removed whatever happens: the next steps count the workspace's files.
      try {
        await openFile("hostile_names.py");
        await activeEditor().locator(".codelens-decoration a", { hasText: "FX: traceable" }).first().waitFor({ timeout: TRACE_TIMEOUT_MS });
        await openFromCodeLens("Show graph", "Graph: Hostile");
        const view = page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
        await view.locator(".fx-item").first().waitFor({ timeout: UI_TIMEOUT_MS });
        await view.locator("button", { hasText: "Expand all" }).click();
        const shown = await view.locator("body").innerText();
        assert.ok(shown.includes(hostile.slice("</script>".length, hostile.indexOf("<b>"))), shown.slice(0, 2000));
        assert.equal(await view.locator("img").count(), 0);
        assert.equal(await view.locator(".fx-graph b, .fx-messages b, .fx-toolbar b, .fx-details b").count(), 0);
        await view.locator(".fx-item").last().click();
        // The webview's own document: nothing in it ran the name's onerror.
        const frame = page.frames().find((each) => each.name() === "active-frame" || /active-frame/.test(each.url()));
        if (frame) assert.equal(await frame.evaluate(() => window.pwned), undefined);
        assert.equal(await view.locator("img").count(), 0);
        await screenshot("04e-graph-view-hostile-names");
        await closeTab("Graph: Hostile");
        await oneEditorGroup();
        await closeTab("hostile_names.py");
      } finally {
        fs.rmSync(modelFile, { force: true });
      }
    }));

  it("cancels FX: Trace Workspace from its progress notification", () =>
    step("04b-trace-workspace-cancel", async () => {
      const { page } = run;
      await runCommand("FX: Trace Workspace");
      const progress = page.locator(".notifications-toasts .notification-toast", { hasText: "FX: tracing the workspace" });
      await progress.first().waitFor({ state: "visible", timeout: UI_TIMEOUT_MS });
      await screenshot("04b-trace-workspace-progress");
      await progress.first().hover();
      await progress.first().locator(".monaco-button", { hasText: "Cancel" }).click();
      const cancelledAt = Date.now();
      // slow_import.py sleeps 20 s on import: an answer well before that means the server stopped.
      const summary = page.locator(".notifications-toasts .notification-toast", { hasText: /FX: tracing the workspace was cancelled|cancelled before the end/ });
      await summary.first().waitFor({ state: "visible", timeout: 10_000 });
      assert.ok(Date.now() - cancelledAt < 10_000);
      await screenshot("04b-trace-workspace-cancelled");
      await page.keyboard.press("Escape");
    }));

  it("traces the workspace from the command palette with a progress notification", () =>
    step("04c-trace-workspace", async () => {
      const { page } = run;
      await runCommand("FX: Trace Workspace");
      const summary = page.locator(".notifications-toasts .notification-toast", { hasText: "FX: traced" });
      await summary.first().waitFor({ state: "visible", timeout: TRACE_TIMEOUT_MS });
      const text = await summary.first().innerText();
      assert.match(text, /traced \d+ modules in 5 files; 2 not traceable\./);
      await screenshot("04c-trace-workspace");
    }));

  it("applies the FX002 quick fix through Ctrl+. and the diagnostic disappears", () =>
    step("05-quick-fix", async () => {
      const { page } = run;
      await openFile("len_model.py");
      await token("len", "batch = len(x)").click();
      await page.keyboard.press("Control+.");
      const actions = page.locator(".action-widget .monaco-list-row");
      await actions.first().waitFor({ state: "visible", timeout: UI_TIMEOUT_MS });
      const titles = await actions.allInnerTexts();
      const wrapIndex = titles.findIndex((title) => /wrap/i.test(title) && /len/.test(title));
      assert.ok(wrapIndex >= 0, `a quick fix that wraps len among: ${JSON.stringify(titles)}`);
      await screenshot("05-quick-fix-menu");
      // The menu takes keys, not clicks (a pointer-block layer covers it): move the focus, Enter.
      const wanted = Number(await actions.nth(wrapIndex).getAttribute("data-index"));
      await waitFor(
        async () => {
          const focused = Number(await page.locator(".action-widget .monaco-list-row.focused").getAttribute("data-index", READ));
          if (focused === wanted) return true;
          await page.keyboard.press(focused < wanted ? "ArrowDown" : "ArrowUp");
          return false;
        },
        "the wrap quick fix to be focused",
        UI_TIMEOUT_MS,
      );
      await page.keyboard.press("Enter");
      await waitFor(async () => /fx\.wrap\("len"\)/.test(await editorText()), "the wrap inserted into the file", UI_TIMEOUT_MS);
      await page.keyboard.press("Control+S");
      await waitFor(
        async () => (await activeEditor().locator(".squiggly-error").count()) === 0,
        "the FX002 squiggle to disappear",
        TRACE_TIMEOUT_MS,
      );
      await showProblems();
      await waitFor(
        async () => !(await problemRows()).some((label) => /FX002/.test(label)),
        "the FX002 Problems entry to disappear",
        UI_TIMEOUT_MS,
      );
      const saved = fs.readFileSync(path.join(run.workspace, "len_model.py"), "utf8");
      assert.match(saved, /fx\.wrap\("len"\)/);
      await screenshot("05-quick-fix-applied");
    }));
  it("checks a notebook's cells: FX002 in a cell, its quick fix into the imports cell, gone after the edit", () =>
    step("09-notebook", async () => {
      const { page } = run;
      // VS Code's built-in ipynb extension opens it in the notebook editor; no kernel is needed
      // (fx-lsp never talks to one), and the training cell is never run.
      const name = "len_notebook.ipynb";
      const marker = path.join(run.dir, "notebook-training-ran");
      const cells = [
        ["markdown", "# A model written in a notebook"],
        ["code", "import torch\nfrom torch import nn"],
        ["code", "class CountsRows(nn.Module):\n    def forward(self, x):\n        return x * len(x)"],
        ["code", `import pathlib\npathlib.Path(${JSON.stringify(marker)}).write_text("ran")\nmodel = CountsRows()\nmodel(torch.randn(2, 4))`],
      ];
      const notebook = {
        cells: cells.map(([kind, text], index) => ({
          cell_type: kind, id: `cell-${index}`, metadata: {}, source: text.split(/(?<=\n)/),
          ...(kind === "code" ? { execution_count: null, outputs: [] } : {}),
        })),
        metadata: { kernelspec: { display_name: "Python 3", language: "python", name: "python3" }, language_info: { name: "python" } },
        nbformat: 4,
        nbformat_minor: 5,
      };
      const file = path.join(run.workspace, name);
      fs.writeFileSync(file, JSON.stringify(notebook, null, 1) + "\n");
      const cellRow = (text) => page.locator(".notebook-editor .code-cell-row", { hasText: text }).first();
      // Written after the workbench opened, which may not list it in the Explorer yet: Quick
      // Open searches the disk.
      const input = page.locator(".quick-input-widget input");
      await waitFor(
        async () => {
          await page.keyboard.press("Escape");
          await page.keyboard.press("Control+P");
          await input.waitFor({ state: "visible", timeout: 3000 });
          await input.fill(name);
          await page.locator(".quick-input-list .monaco-list-row", { hasText: name }).first().waitFor({ timeout: 5000 });
          await page.keyboard.press("Enter");
          await cellRow("class CountsRows").waitFor({ timeout: 5000 });
          return true;
        },
        `${name} to open in the notebook editor`,
        UI_TIMEOUT_MS,
      );
      const squiggle = cellRow("class CountsRows").locator(".squiggly-error").first();
      await squiggle.waitFor({ state: "attached", timeout: TRACE_TIMEOUT_MS });
      assert.equal(await cellRow("import torch").locator(".squiggly-error").count(), 0);
      await showProblems();
      const fx002 = await waitFor(
        async () => (await problemRows()).find((label) => /FX002/.test(label) && /len/.test(label)),
        "a Problems entry with FX002 for the notebook cell",
        UI_TIMEOUT_MS,
      );
      assert.match(fx002, /Ln 3, Col 20/, `the entry is on the cell's line 3: ${fx002}`);
      const lenToken = cellRow("class CountsRows")
        .locator(".view-line", { hasText: "return x * len(x)" })
        .locator("span > span", { hasText: /^len$/ })
        .first();
      await hoverText(lenToken, /FX002/, UI_TIMEOUT_MS);
      await screenshot("09-notebook-fx002");

      await lenToken.click();
      await page.keyboard.press("Control+.");
      const actions = page.locator(".action-widget .monaco-list-row");
      await actions.first().waitFor({ state: "visible", timeout: UI_TIMEOUT_MS });
      const titles = await actions.allInnerTexts();
      const wanted = titles.findIndex((title) => /wrap/i.test(title) && /len/.test(title));
      assert.ok(wanted >= 0, `a quick fix that wraps len among: ${JSON.stringify(titles)}`);
      const wantedIndex = Number(await actions.nth(wanted).getAttribute("data-index"));
      await waitFor(
        async () => {
          const focused = Number(await page.locator(".action-widget .monaco-list-row.focused").getAttribute("data-index", READ));
          if (focused === wantedIndex) return true;
          await page.keyboard.press(focused < wantedIndex ? "ArrowDown" : "ArrowUp");
          return false;
        },
        "the wrap quick fix to be focused",
        UI_TIMEOUT_MS,
      );
      await screenshot("09-notebook-quick-fix-menu");
      await page.mouse.move(5, 5); // no hover over the cells while they change
      await page.keyboard.press("Enter");
      // The call lands after the imports, in their cell; the class's cell is unchanged.
      const cellText = (text) => cellRow(text).locator(".view-lines").innerText(READ).then((t) => t.replace(/\u00a0/g, " "));
      await waitFor(
        async () => /fx\.wrap\("len"\)/.test(await cellText("from torch import nn")),
        "the wrap inserted into the imports cell",
        UI_TIMEOUT_MS,
      );
      assert.doesNotMatch(await cellText("class CountsRows"), /wrap/);
      await page.keyboard.press("Control+S");
      await waitFor(
        async () => (await page.locator(".notebook-editor .squiggly-error").count()) === 0,
        "the FX002 squiggle in the cell to disappear",
        TRACE_TIMEOUT_MS,
      );
      await waitFor(
        async () => !(await problemRows()).some((label) => /FX002/.test(label)),
        "the notebook's FX002 Problems entry to disappear",
        UI_TIMEOUT_MS,
      );
      // The class's code lens follows the new verdict, in its own cell only.
      const lenses = (text) => cellRow(text).locator(".codelens-decoration").allInnerTexts().then((t) => t.join(" "));
      await waitFor(async () => /FX: traceable/.test(await lenses("class CountsRows")), "the class cell's code lens to say traceable", TRACE_TIMEOUT_MS);
      assert.equal(await lenses("from torch import nn"), "", "no code lens in the imports cell");
      const saved = JSON.parse(fs.readFileSync(file, "utf8"));
      const sourceOf = (cell) => (Array.isArray(cell.source) ? cell.source.join("") : cell.source);
      assert.match(sourceOf(saved.cells[1]), /torch\.fx\.wrap\("len"\)/, "the fix is in the imports cell on disk");
      assert.equal(sourceOf(saved.cells[2]), cells[2][1]);
      assert.ok(!fs.existsSync(marker), "the training cell never ran");
      await screenshot("09-notebook-quick-fix-applied");
      await closeTab(name);
    }));

  it("applies a changed fxLsp.severity live, without a restart", () =>
    step("06a-severity", async () => {
      const startsBefore = fs.readFileSync(findLog("FX Trace.log"), "utf8").match(/Starting: /g).length;
      const settingsFile = path.join(run.workspace, ".vscode", "settings.json");
      const settings = JSON.parse(fs.readFileSync(settingsFile, "utf8"));
      await openFile("control_flow.py");
      await activeEditor().locator(".squiggly-error").first().waitFor({ state: "attached", timeout: TRACE_TIMEOUT_MS });
      fs.writeFileSync(settingsFile, JSON.stringify({ ...settings, "fxLsp.severity": "warning" }, null, 2));
      const warning = activeEditor().locator(".squiggly-warning").first();
      await warning.waitFor({ state: "attached", timeout: TRACE_TIMEOUT_MS });
      assert.equal(await lineOf(warning), 11);
      await screenshot("06a-severity-warning");
      fs.writeFileSync(settingsFile, JSON.stringify(settings, null, 2));
      await activeEditor().locator(".squiggly-error").first().waitFor({ state: "attached", timeout: TRACE_TIMEOUT_MS });
      const log = fs.readFileSync(findLog("FX Trace.log"), "utf8");
      assert.equal(log.match(/Starting: /g).length, startsBefore, "no restart for a server option");
      assert.match(log, /Sending settings: \{"run":"onSave","timeout":20,"severity":"warning"/);
    }));

  it("checks export and compile too: a graph break with its GB link, the per-mode code lens, the exported graph", () =>
    step("07-pt2-modes", async () => {
      const { page } = run;
      const settingsFile = path.join(run.workspace, ".vscode", "settings.json");
      const settings = JSON.parse(fs.readFileSync(settingsFile, "utf8"));
      const modelFile = path.join(run.workspace, "pt2_model.py");
      fs.writeFileSync(modelFile, PT2_MODEL);
      fs.writeFileSync(settingsFile, JSON.stringify({ ...settings, "fxLsp.modes": ["fx", "export", "compile"] }, null, 2));
      await openFile("pt2_model.py");
      // One code lens per class names every mode's verdict; compile's says its breaks and graphs.
      const gatedLens = activeEditor().locator(".codelens-decoration a", { hasText: "compile: 1 graph break, 2 graphs" });
      await gatedLens.first().waitFor({ timeout: TRACE_TIMEOUT_MS });
      assert.equal(await gatedLens.first().innerText(), "fx: 1 failure · export: 1 failure · compile: 1 graph break, 2 graphs");
      const headLens = activeEditor().locator(".codelens-decoration a", { hasText: "export: traceable" });
      await headLens.first().waitFor({ timeout: TRACE_TIMEOUT_MS });
      // The data-dependent `if`: FX001 (fx), FX401 (export) and PyTorch's GB0170 (compile), whose
      // code links to PyTorch's page for that graph break.
      const text = await hoverText(token("1.0", "if y.abs()"), /GB0170/, UI_TIMEOUT_MS);
      assert.match(text, /FX001/);
      assert.match(text, /FX401/);
      const link = page.locator(".monaco-hover:not(.hidden) a", { hasText: "GB0170" }).first();
      assert.match(await link.getAttribute("data-href") ?? await link.getAttribute("href") ?? "", /gb0170\.html/);
      await screenshot("readme-pt2-graph-break");

      // The graph view draws the fx graph first, and the exported program's after a pick.
      await page.mouse.move(5, 5);
      await page.keyboard.press("Escape");
      await activeEditor().locator(".codelens-decoration a", { hasText: "Show graph" }).nth(1).click();
      await activeTab("Graph: Head").waitFor({ timeout: UI_TIMEOUT_MS });
      const view = page.frameLocator("iframe.webview.ready").frameLocator("iframe#active-frame");
      await view.locator('.fx-item[data-name="fc1"]').waitFor({ timeout: UI_TIMEOUT_MS });
      await view.locator("select.fx-mode").selectOption("export");
      // The exported program lifts the weights to inputs (p_fc1_weight) and groups its ATen
      // calls under the submodule that made them; expanded, fc1's call is the node `linear`.
      await view.locator('.fx-item[data-name="p_fc1_weight"]').waitFor({ timeout: UI_TIMEOUT_MS });
      await activeTab("Graph: Head (export)").waitFor({ timeout: UI_TIMEOUT_MS });
      await view.locator("button", { hasText: "Expand all" }).click();
      await view.locator("button", { hasText: "Fit" }).click();
      await view.locator('.fx-item[data-name="linear"]').waitFor({ timeout: UI_TIMEOUT_MS });
      assert.match(await view.locator('.fx-item[data-name="gelu"]').textContent(), /gelu/);
      await screenshot("readme-pt2-exported-graph");
      await closeTab("Graph: Head (export)");
      await oneEditorGroup();
      fs.writeFileSync(settingsFile, JSON.stringify(settings, null, 2));
      await closeTab("pt2_model.py");
      fs.rmSync(modelFile);
    }));

  it("restarts the server with FX: Restart Server, one restart at a time", () =>
    step("06b-restart", async () => {
      const { page } = run;
      const lifecycle = () =>
        fs
          .readFileSync(findLog("FX Trace.log"), "utf8")
          .split("\n")
          .filter((line) => /Stopping the server\.|Starting: |The server is running\.|The server did not start/.test(line))
          .map((line) => line.replace(/^.*?\] /, ""));
      const runningBefore = lifecycle().filter((line) => line.startsWith("The server is running")).length;
      await runCommand("FX: Restart Server");
      await runCommand("FX: Restart Server");
      // Two requests make two restarts: the second is queued if the first is still running,
      // or starts after it. Waiting for one left a race: the log read between the first
      // restart's end and the second's "Starting: " line, with no line after it yet.
      await waitFor(
        () => lifecycle().filter((line) => line.startsWith("The server is running")).length >= runningBefore + 2 && lifecycle().at(-1).startsWith("The server is running"),
        "both restarts to end with the server running",
        TRACE_TIMEOUT_MS,
      );
      // Every start finished (running) before the next stop began: restarts never overlapped.
      const lines = lifecycle();
      for (let i = 0; i < lines.length; i++) {
        if (lines[i].startsWith("Starting: ")) assert.match(lines[i + 1] ?? "", /^The server (is running|did not start)/, lines.join("\n"));
      }
      await openFile("control_flow.py");
      await activeEditor().locator(".squiggly-error").first().waitFor({ state: "attached", timeout: TRACE_TIMEOUT_MS });
    }));
});

describe("fx-lsp in VS Code (code-server), restricted workspace", () => {
  before(() =>
    launchVSCode({
      trust: false,
      // In Restricted Mode only the user's own interpreter setting counts.
      userSettings: {
        "security.workspace.trust.enabled": true,
        "security.workspace.trust.startupPrompt": "never",
        "security.workspace.trust.banner": "always",
        "fxLsp.interpreter": PYTHON,
      },
      workspaceSettings: {},
    }),
  );
  after(shutdownVSCode);

  it("imports no workspace code until trusted, then traces without a reload", () =>
    step("06-trust", async () => {
      const { page } = run;
      await openFile("len_model.py");
      const untrusted = page.locator(".notifications-toasts .notification-toast", { hasText: "tracing is off until the workspace is trusted" });
      await untrusted.first().waitFor({ state: "visible", timeout: TRACE_TIMEOUT_MS });
      assert.equal(await activeEditor().locator(".squiggly-error").count(), 0, "nothing traced in Restricted Mode");
      await screenshot("06-restricted");
      await runCommand("Workspaces: Manage Workspace Trust");
      await page.locator(".workspace-trust-editor .monaco-button", { hasText: /^Trust/ }).first().click();
      await openFile("len_model.py");
      const squiggle = activeEditor().locator(".squiggly-error").first();
      await squiggle.waitFor({ state: "attached", timeout: TRACE_TIMEOUT_MS });
      assert.equal(await lineOf(squiggle), 11);
      await screenshot("06-trusted");
    }));
});

describe("fx-lsp in VS Code (code-server), an interpreter without fx-lsp", () => {
  const venv = { dir: "", python: "", bare: "" };
  before(async () => {
    venv.dir = freshTorchVenv();
    venv.python = path.join(venv.dir, "bin", "python");
    venv.bare = path.join(path.dirname(venv.dir), "bare-venv");
    execFileSync(PYTHON, ["-m", "venv", "--without-pip", venv.bare]);
    // No PYTHONPATH: it would lend these Pythons the checkout's fx_lsp.
    await launchVSCode({
      trust: true,
      userSettings: {},
      workspaceSettings: { "fxLsp.interpreter": path.join(venv.bare, "bin", "python") },
      withoutEnv: ["PYTHONPATH"],
    });
  });
  after(async () => {
    await shutdownVSCode();
    if (venv.dir) fs.rmSync(path.dirname(venv.dir), { recursive: true, force: true });
  });

  const toast = (text) => run.page.locator(".notifications-toasts .notification-toast", { hasText: text });
  /** A toast once its fade-in is over, for a screenshot that shows it whole. */
  const shownToast = (text) => run.page.locator(".notifications-toasts .notification-toast.notification-fade-in-done", { hasText: text });

  it("says once that fx-lsp is missing from a Python without pip, and what to do", () =>
    step("08-no-pip", async () => {
      const barePython = path.join(venv.bare, "bin", "python");
      const missing = toast("is not installed in");
      await missing.first().waitFor({ state: "visible", timeout: UI_TIMEOUT_MS });
      const text = await missing.first().innerText();
      assert.ok(text.includes(`${barePython} -m ensurepip`), text);
      assert.match(text, /no pip/);
      assert.equal(await missing.first().locator(".monaco-button", { hasText: /^Install/ }).count(), 0, "no install button without pip");
      await shownToast("is not installed in").first().waitFor({ state: "visible", timeout: UI_TIMEOUT_MS });
      await screenshot("08-no-pip");
      // No crash loop: nothing more is tried until something changes (no event to wait for, so a pause).
      await new Promise((resolve) => setTimeout(resolve, 3000));
      assert.equal(await missing.count(), 1, "one notification");
      const log = fs.readFileSync(findLog("FX Trace.log"), "utf8");
      assert.equal(log.match(/fx-lsp is not installed in /g)?.length, 1, "one failed start in the log");
      // Escape hides the toasts (the notification stays in the notification center).
      await run.page.keyboard.press("Escape");
      await waitFor(async () => (await missing.count()) === 0, "the toast to hide", UI_TIMEOUT_MS);
    }));

  it("offers the bundled fx-lsp for an interpreter without it, installs it there on a click, and traces without a reload", () =>
    step("08-install-server", async () => {
      const { page } = run;
      const settingsFile = path.join(run.workspace, ".vscode", "settings.json");
      fs.writeFileSync(settingsFile, JSON.stringify({ "fxLsp.interpreter": venv.python }, null, 2));
      const offer = toast(`the fx-lsp server is not installed in ${venv.python}`);
      await offer.first().waitFor({ state: "visible", timeout: UI_TIMEOUT_MS });
      const install = offer.first().locator(".monaco-button", { hasText: `Install fx-lsp ${EXTENSION_VERSION}` });
      await install.waitFor({ timeout: UI_TIMEOUT_MS });
      await shownToast(`not installed in ${venv.python}`).first().waitFor({ state: "visible", timeout: UI_TIMEOUT_MS });
      await screenshot("08-install-offer");
      // Nothing is installed before the click.
      assert.equal(fxLspIn(venv.python, run.dir), null);
      assert.equal(await offer.count(), 1, "one notification");
      // A page reload would drop this.
      await page.evaluate(() => {
        window.fxLspNotReloaded = true;
      });
      await install.click();
      await shownToast(`installing fx-lsp ${EXTENSION_VERSION} into ${venv.python}`).first().waitFor({ state: "visible", timeout: UI_TIMEOUT_MS });
      await screenshot("08-install-progress");

      await openFile("control_flow.py");
      const squiggle = activeEditor().locator(".squiggly-error").first();
      await squiggle.waitFor({ state: "attached", timeout: INSTALL_TIMEOUT_MS });
      assert.equal(await lineOf(squiggle), 11, "the squiggle is on `if x.sum() > 0:`");
      await showProblems();
      await waitFor(async () => (await problemRows()).some((label) => /FX001/.test(label)), "a Problems entry with FX001", UI_TIMEOUT_MS);
      await screenshot("08-installed-diagnostics");
      assert.equal(await page.evaluate(() => window.fxLspNotReloaded), true, "the window was not reloaded");

      // The wheel of the vsix went into that venv, and only there.
      const installed = fxLspIn(venv.python, run.dir);
      assert.equal(installed?.version, EXTENSION_VERSION);
      assert.ok(installed.origin.startsWith(venv.dir), installed.origin);
      const log = fs.readFileSync(findLog("FX Trace.log"), "utf8");
      const wheel = `bundled/fx_lsp-${EXTENSION_VERSION}-py3-none-any.whl`;
      assert.match(log, new RegExp(`Installing: ${escapeRegExp(venv.python)} -m pip install .*${escapeRegExp(wheel)}`));
      assert.match(log, new RegExp(`pip: Successfully installed .*fx-lsp-${escapeRegExp(EXTENSION_VERSION)}`));
      assert.equal(log.match(/Installing: /g).length, 1, "one install");
      assert.equal(await toast("is not installed in").count(), 0, "no further offer");
    }));
});
