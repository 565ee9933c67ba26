import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { after, before, describe, it } from "node:test";
import {
  InstallOffers,
  InterpreterProbe,
  ProcessOptions,
  bundledWheelName,
  classifyPipFailure,
  offerPrompt,
  parseProbeOutput,
  pipFailureMessage,
  planServerStart,
  probeInterpreter,
  runPipInstall,
  serverVersionDiffers,
} from "../src/serverInstall";

const VERSION = "0.1.0";

function probeOf(fields: Partial<InterpreterProbe>): InterpreterProbe {
  return { importable: true, version: VERSION, pip: true, executable: "/venv/bin/python", ...fields };
}

describe("planServerStart", () => {
  it("offers the install and starts nothing when fx_lsp is missing", () => {
    assert.deepEqual(planServerStart(probeOf({ importable: false, version: null }), VERSION), {
      start: false,
      offer: { kind: "install" },
    });
  });

  it("starts without an offer when the installed version is the extension's", () => {
    assert.deepEqual(planServerStart(probeOf({}), VERSION), { start: true, offer: undefined });
  });

  it("starts the installed server and offers an update when its version is another", () => {
    assert.deepEqual(planServerStart(probeOf({ version: "0.0.9" }), VERSION), {
      start: true,
      offer: { kind: "update", installed: "0.0.9" },
    });
  });

  it("takes an importable fx_lsp without metadata (a checkout on PYTHONPATH) for another version", () => {
    assert.deepEqual(planServerStart(probeOf({ version: null }), VERSION), {
      start: true,
      offer: { kind: "update", installed: null },
    });
  });

  it("counts a distribution whose module cannot be imported as missing", () => {
    assert.equal(planServerStart(probeOf({ importable: false, version: VERSION }), VERSION).start, false);
  });

  it("compares the running server's serverInfo.version exactly", () => {
    assert.equal(serverVersionDiffers(VERSION, VERSION), false);
    assert.equal(serverVersionDiffers("0.1.0.dev0", VERSION), true);
    assert.equal(serverVersionDiffers(undefined, VERSION), true);
  });
});

describe("offerPrompt", () => {
  const ready = { pip: true, wheelBundled: true };

  it("offers the bundled version's install into the named interpreter", () => {
    const prompt = offerPrompt({ kind: "install" }, "/venv/bin/python", VERSION, ready);
    assert.equal(prompt.installButton, "Install fx-lsp 0.1.0");
    assert.match(prompt.message, /not installed in \/venv\/bin\/python\./);
    assert.equal(prompt.severity, "warning");
  });

  it("offers an update that names both versions", () => {
    const prompt = offerPrompt({ kind: "update", installed: "0.0.9" }, "/venv/bin/python", VERSION, ready);
    assert.equal(prompt.installButton, "Update to fx-lsp 0.1.0");
    assert.match(prompt.message, /has fx-lsp 0\.0\.9, this extension comes with fx-lsp 0\.1\.0/);
  });

  it("offers no install without pip, and says what to do instead", () => {
    const prompt = offerPrompt({ kind: "install" }, "/venv/bin/python", VERSION, { pip: false, wheelBundled: true });
    assert.equal(prompt.installButton, undefined);
    assert.match(prompt.message, /no pip/);
    assert.match(prompt.message, /python3 -m venv \.venv/);
    assert.match(prompt.message, /\/venv\/bin\/python -m ensurepip/);
  });

  it("offers no install when this build carries no wheel", () => {
    const prompt = offerPrompt({ kind: "install" }, "python3", VERSION, { pip: true, wheelBundled: false });
    assert.equal(prompt.installButton, undefined);
    assert.match(prompt.message, /carries no fx-lsp wheel/);
  });

  it("names the wheel that scripts/wheel.mjs bundles", () => {
    assert.equal(bundledWheelName(VERSION), "fx_lsp-0.1.0-py3-none-any.whl");
  });
});

describe("InstallOffers", () => {
  const python = "/venv/bin/python";

  it("shows one install offer at a time, and again at a later start once it is closed", () => {
    const offers = new InstallOffers();
    assert.equal(offers.shouldOffer(python), true);
    offers.shown(python, { kind: "install" });
    assert.equal(offers.shouldOffer(python), false);
    assert.equal(offers.shouldOffer("/other/bin/python"), true);
    offers.closed(python);
    assert.equal(offers.shouldOffer(python), true);
  });

  it("shows an update offer once per interpreter, the server running meanwhile", () => {
    const offers = new InstallOffers();
    offers.shown(python, { kind: "update", installed: "0.0.9" });
    offers.closed(python);
    assert.equal(offers.shouldOffer(python), false);
  });

  it("offers nothing more after an install attempt, until an explicit restart resets it", () => {
    const offers = new InstallOffers();
    offers.shown(python, { kind: "install" });
    offers.closed(python);
    offers.installAttempted(python);
    assert.equal(offers.shouldOffer(python), false);
    offers.reset();
    assert.equal(offers.shouldOffer(python), true);
  });
});

describe("classifyPipFailure", () => {
  it("reads pip's PEP 668 refusal", () => {
    // pip 23's words (the real refusal is also run below where a system Python has the marker).
    const output = [
      "error: externally-managed-environment",
      "",
      "× This environment is externally managed",
      "╰─> To install Python packages system-wide, try apt install",
      "    python3-xyz, where xyz is the package you are trying to",
      "    install.",
      "hint: See PEP 668 for the detailed specification.",
    ].join("\n");
    assert.equal(classifyPipFailure(output), "externally-managed");
    assert.match(pipFailureMessage("externally-managed", "/usr/bin/python3", 1), /PEP 668.*\/usr\/bin\/python3 -m venv \.venv/);
  });

  it("reads a Python without pip", () => {
    assert.equal(classifyPipFailure("/venv/bin/python: No module named pip\n"), "pip-missing");
    assert.match(pipFailureMessage("pip-missing", "/venv/bin/python", 1), /ensurepip/);
  });

  it("leaves any other failure to the log", () => {
    assert.equal(classifyPipFailure("ERROR: Could not find a version that satisfies the requirement pygls>=2"), "other");
    assert.match(pipFailureMessage("other", "/venv/bin/python", 1), /exited with 1\): see the log/);
  });

  it("parses the probe's line and rejects anything else", () => {
    assert.deepEqual(parseProbeOutput('{"importable": false, "version": null, "pip": true, "executable": "/p"}\n'), {
      importable: false,
      version: null,
      pip: true,
      executable: "/p",
    });
    assert.equal(parseProbeOutput("Traceback (most recent call last):"), undefined);
    assert.equal(parseProbeOutput('{"importable": "yes", "version": null, "pip": true, "executable": "/p"}'), undefined);
  });
});

// ----- Against real interpreters: virtual environments made here, and the machine's own Pythons.

const SYSTEM_PYTHON = execFileSync("python3", ["-c", "import sys; print(sys.executable)"], { encoding: "utf8" }).trim();

/** A Debian-style Python that refuses pip installs (PEP 668), if this machine has one. */
function externallyManagedPython(): string | undefined {
  for (const candidate of ["/usr/bin/python3"]) {
    if (!fs.existsSync(candidate)) continue;
    try {
      const marked = execFileSync(
        candidate,
        ["-c", "import os, sys, sysconfig; print(sys.prefix == sys.base_prefix and os.path.exists(os.path.join(sysconfig.get_path('stdlib'), 'EXTERNALLY-MANAGED')))"],
        { encoding: "utf8" },
      ).trim();
      const hasPip = execFileSync(candidate, ["-c", "import importlib.util; print(importlib.util.find_spec('pip') is not None)"], { encoding: "utf8" }).trim();
      if (marked === "True" && hasPip === "True") return candidate;
    } catch {
      continue;
    }
  }
  return undefined;
}

/** A stand-in fx-lsp wheel (no dependencies, nothing from an index): `fx_lsp` with its metadata. */
function writeFakeWheel(dir: string, version: string): string {
  const wheel = path.join(dir, bundledWheelName(version));
  const script = `
import base64, hashlib, sys, zipfile
wheel, version = sys.argv[1], sys.argv[2]
info = f"fx_lsp-{version}.dist-info"
files = {
    "fx_lsp/__init__.py": "",
    f"{info}/METADATA": f"Metadata-Version: 2.1\\nName: fx-lsp\\nVersion: {version}\\n",
    f"{info}/WHEEL": "Wheel-Version: 1.0\\nGenerator: test\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n",
}
def digest(text):
    raw = hashlib.sha256(text.encode()).digest()
    return "sha256=" + base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
record = "".join(f"{name},{digest(text)},{len(text.encode())}\\n" for name, text in files.items())
files[f"{info}/RECORD"] = record + f"{info}/RECORD,,\\n"
with zipfile.ZipFile(wheel, "w") as archive:
    for name, text in files.items():
        archive.writestr(name, text)
`;
  execFileSync(SYSTEM_PYTHON, ["-c", script, wheel, version]);
  return wheel;
}

describe("against real interpreters", () => {
  let scratch: string;
  let options: ProcessOptions;

  before(() => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), "fx-lsp-install-test-"));
    // As the extension runs them: a neutral folder, and no PYTHONPATH that could lend fx_lsp.
    const env: NodeJS.ProcessEnv = { ...process.env, PYTHONSAFEPATH: "1" };
    delete env.PYTHONPATH;
    delete env.PIP_BREAK_SYSTEM_PACKAGES;
    options = { cwd: scratch, env };
  });
  after(() => fs.rmSync(scratch, { recursive: true, force: true }));

  it("finds the project's fx_lsp and pip in the Python the tests run with", async () => {
    // With the tests' own environment: ci.sh runs them where fx_lsp is importable (an install,
    // or PYTHONPATH on a checkout).
    const result = await probeInterpreter(SYSTEM_PYTHON, { cwd: scratch, env: { ...process.env, PYTHONSAFEPATH: "1" } });
    assert.ok(result.ok, JSON.stringify(result));
    assert.equal(result.probe.importable, true);
    assert.equal(typeof result.probe.version, "string");
    assert.equal(result.probe.pip, true);
  });

  it("says when the interpreter does not exist, or does not run", async () => {
    const missing = await probeInterpreter(path.join(scratch, "no-such-python"), options);
    assert.deepEqual(missing, { ok: false, reason: "interpreter-missing", detail: `${path.join(scratch, "no-such-python")} was not found` });
    const broken = path.join(scratch, "broken-python");
    fs.writeFileSync(broken, "#!/bin/sh\necho 'this python is broken' >&2\nexit 1\n", { mode: 0o755 });
    const result = await probeInterpreter(broken, options);
    assert.equal(result.ok, false);
    assert.match(!result.ok ? result.detail : "", /this python is broken/);
  });

  it("a venv without pip: no fx_lsp, no pip, and pip's own failure reads as pip missing", async () => {
    const venv = path.join(scratch, "no-pip");
    execFileSync(SYSTEM_PYTHON, ["-m", "venv", "--without-pip", venv]);
    const python = path.join(venv, "bin", "python");
    const result = await probeInterpreter(python, options);
    assert.ok(result.ok, JSON.stringify(result));
    assert.deepEqual(result.probe, { importable: false, version: null, pip: false, executable: python });
    assert.deepEqual(planServerStart(result.probe, VERSION), { start: false, offer: { kind: "install" } });

    const lines: string[] = [];
    const installed = await runPipInstall(python, writeFakeWheel(scratch, VERSION), options, (line) => lines.push(line));
    assert.equal(installed.ok, false);
    assert.equal(!installed.ok && installed.failure, "pip-missing");
    assert.ok(lines.some((line) => /No module named pip/.test(line)), lines.join("\n"));
  });

  it("a venv with pip: installs the wheel on request, after which the same version starts", async () => {
    const venv = path.join(scratch, "with-pip");
    execFileSync(SYSTEM_PYTHON, ["-m", "venv", venv]);
    const python = path.join(venv, "bin", "python");
    const before = await probeInterpreter(python, options);
    assert.ok(before.ok, JSON.stringify(before));
    assert.deepEqual(planServerStart(before.probe, VERSION), { start: false, offer: { kind: "install" } });
    assert.equal(before.probe.pip, true);

    const wheelDir = fs.mkdtempSync(path.join(scratch, "wheel-"));
    const lines: string[] = [];
    const installed = await runPipInstall(python, writeFakeWheel(wheelDir, VERSION), options, (line) => lines.push(line));
    assert.deepEqual(installed, { ok: true }, lines.join("\n"));
    assert.ok(lines.some((line) => /Successfully installed fx-lsp-0\.1\.0/.test(line)), lines.join("\n"));
    const afterInstall = await probeInterpreter(python, options);
    assert.ok(afterInstall.ok);
    assert.deepEqual(planServerStart(afterInstall.probe, VERSION), { start: true, offer: undefined });
    // Into that venv only: the tests' own Python still has the project's install.
    const located = execFileSync(python, ["-c", "import fx_lsp; print(fx_lsp.__file__)"], { ...options, encoding: "utf8" }).trim();
    assert.ok(located.startsWith(venv), located);

    // A later version in the vsix is offered as an update of the one installed.
    assert.deepEqual(planServerStart(afterInstall.probe, "0.2.0"), { start: true, offer: { kind: "update", installed: VERSION } });
  });

  it("a system Python under PEP 668: pip's refusal reads as externally managed", async (t) => {
    const python = externallyManagedPython();
    if (python === undefined) {
      t.skip("no externally managed Python with pip on this machine");
      return;
    }
    // A wheel path that does not exist: pip refuses before it looks at it, and would install
    // nothing even if it went on.
    const lines: string[] = [];
    const result = await runPipInstall(python, path.join(scratch, "absent", bundledWheelName(VERSION)), options, (line) => lines.push(line));
    assert.equal(result.ok, false);
    assert.equal(!result.ok && result.failure, "externally-managed", lines.join("\n"));
  });
});
