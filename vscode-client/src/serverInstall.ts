// Whether the chosen interpreter can run the server the extension comes with, and installing the
// fx-lsp wheel bundled in the vsix into it when the user asks. Pure logic plus child processes,
// no `vscode` import, so that it is unit-tested in plain node against real interpreters.
import { execFile, spawn } from "node:child_process";

export const SERVER_MODULE = "fx_lsp";
export const DISTRIBUTION = "fx-lsp";
/** Where the packaging (scripts/wheel.mjs) puts the wheel inside the extension. */
export const BUNDLED_DIR = "bundled";

/** The wheel scripts/wheel.mjs bundles: pure Python, its version the extension's own. */
export function bundledWheelName(version: string): string {
  return `${SERVER_MODULE}-${version}-py3-none-any.whl`;
}

/**
 * Asks the interpreter, without importing `fx_lsp` (that loads torch), whether it can import it,
 * which fx-lsp distribution is installed, and whether it has pip. One JSON line on stdout.
 */
export const PROBE_SCRIPT = [
  "import importlib.metadata, importlib.util, json, sys",
  "try:",
  `    version = importlib.metadata.version("${DISTRIBUTION}")`,
  "except importlib.metadata.PackageNotFoundError:",
  "    version = None",
  "print(json.dumps({",
  `    "importable": importlib.util.find_spec("${SERVER_MODULE}") is not None,`,
  '    "version": version,',
  '    "pip": importlib.util.find_spec("pip") is not None,',
  '    "executable": sys.executable,',
  "}))",
].join("\n");

export interface InterpreterProbe {
  /** `fx_lsp` is importable. */
  importable: boolean;
  /** The installed fx-lsp distribution's version (its metadata); null when there is none. */
  version: string | null;
  /** `pip` is importable, so `<python> -m pip install` can run. */
  pip: boolean;
  /** `sys.executable`: what a bare command such as `python3` stands for. */
  executable: string;
}

export type ProbeResult =
  | { ok: true; probe: InterpreterProbe }
  | { ok: false; reason: "interpreter-missing" | "broken"; detail: string };

export function parseProbeOutput(stdout: string): InterpreterProbe | undefined {
  const line = stdout.trim().split("\n").at(-1) ?? "";
  try {
    const raw = JSON.parse(line) as Record<string, unknown>;
    const version = raw.version;
    if (
      typeof raw.importable !== "boolean" ||
      typeof raw.pip !== "boolean" ||
      typeof raw.executable !== "string" ||
      (version !== null && typeof version !== "string")
    ) {
      return undefined;
    }
    return { importable: raw.importable, version, pip: raw.pip, executable: raw.executable };
  } catch {
    return undefined;
  }
}

/** How the extension starts Python processes: never in the workspace folder (see server.ts). */
export interface ProcessOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
}

export function probeInterpreter(python: string, options: ProcessOptions): Promise<ProbeResult> {
  return new Promise((resolve) => {
    execFile(python, ["-c", PROBE_SCRIPT], { ...options, timeout: 30_000 }, (error, stdout, stderr) => {
      if (error !== null && (error as NodeJS.ErrnoException).code === "ENOENT") {
        resolve({ ok: false, reason: "interpreter-missing", detail: `${python} was not found` });
        return;
      }
      const probe = error === null ? parseProbeOutput(stdout) : undefined;
      if (probe === undefined) {
        const why = stderr.trim() || error?.message || `unexpected output ${JSON.stringify(stdout)}`;
        resolve({ ok: false, reason: "broken", detail: `${python} failed: ${why}` });
        return;
      }
      resolve({ ok: true, probe });
    });
  });
}

/**
 * What to do with a probed interpreter. Without `fx_lsp` nothing can start: offer the install.
 * With another version (or one without metadata, such as a source checkout on PYTHONPATH) the
 * server starts as it is, and an update to the extension's version is offered.
 */
export type StartPlan =
  | { start: false; offer: { kind: "install" } }
  | { start: true; offer: { kind: "update"; installed: string | null } | undefined };

export function planServerStart(probe: InterpreterProbe, extensionVersion: string): StartPlan {
  if (!probe.importable) return { start: false, offer: { kind: "install" } };
  if (probe.version === extensionVersion) return { start: true, offer: undefined };
  return { start: true, offer: { kind: "update", installed: probe.version } };
}

/** The running server's `serverInfo.version` is the truth the metadata only predicts. */
export function serverVersionDiffers(serverVersion: string | undefined, extensionVersion: string): boolean {
  return serverVersion !== extensionVersion;
}

export type Offer = { kind: "install" } | { kind: "update"; installed: string | null };

/** The notification for an offer: its text, its severity, and the install button if one can work. */
export interface OfferPrompt {
  severity: "warning" | "information";
  message: string;
  /** Absent when pip is missing or the vsix carries no wheel: then the text says what to do. */
  installButton?: string;
}

export function noPipAdvice(python: string): string {
  return (
    `Create a virtual environment with fx-lsp's torch (python3 -m venv .venv) and select it, ` +
    `or add pip to this Python (${python} -m ensurepip), then run FX: Restart Server.`
  );
}

export function offerPrompt(
  offer: Offer,
  python: string,
  extensionVersion: string,
  environment: { pip: boolean; wheelBundled: boolean },
): OfferPrompt {
  const wanted = `${DISTRIBUTION} ${extensionVersion}`;
  const problem =
    offer.kind === "install"
      ? `FX Trace: the fx-lsp server is not installed in ${python}.`
      : `FX Trace: ${python} has ${offer.installed === null ? "an fx-lsp of unknown version" : `${DISTRIBUTION} ${offer.installed}`}, ` +
        `this extension comes with ${wanted}.`;
  const severity = offer.kind === "install" ? "warning" : "information";
  if (!environment.wheelBundled) {
    return { severity, message: `${problem} This build of the extension carries no fx-lsp wheel: install ${wanted} there yourself.` };
  }
  if (!environment.pip) {
    return { severity, message: `${problem} That Python has no pip to install it with. ${noPipAdvice(python)}` };
  }
  return {
    severity,
    message: `${problem} Install ${wanted} from the extension into it?`,
    installButton: offer.kind === "install" ? `Install ${wanted}` : `Update to ${wanted}`,
  };
}

/**
 * One notification per situation. An install offer (nothing runs until it is answered) comes back
 * with the next start unless one is still open; an update offer (the server runs meanwhile) comes
 * once per interpreter. After an install into an interpreter, success or failure, nothing more is
 * offered for it, so that a failing pip or a shadowing PYTHONPATH cannot turn into a loop. An
 * explicit FX: Restart Server forgets all of it.
 */
export class InstallOffers {
  /** Interpreters whose offer is on screen. */
  private readonly open = new Set<string>();
  /** Interpreters that get no more offers until reset(). */
  private readonly settled = new Set<string>();

  shouldOffer(python: string): boolean {
    return !this.open.has(python) && !this.settled.has(python);
  }

  shown(python: string, offer: Offer): void {
    this.open.add(python);
    if (offer.kind === "update") this.settled.add(python);
  }

  closed(python: string): void {
    this.open.delete(python);
  }

  installAttempted(python: string): void {
    this.settled.add(python);
  }

  reset(): void {
    this.settled.clear();
  }
}

export type PipFailure = "pip-missing" | "externally-managed" | "other";

/** What pip's output says went wrong; both are stated by pip itself in these words. */
export function classifyPipFailure(output: string): PipFailure {
  if (/No module named pip\b/.test(output)) return "pip-missing";
  if (/externally-managed-environment/.test(output)) return "externally-managed";
  return "other";
}

export function pipFailureMessage(failure: PipFailure, python: string, exitCode: number | null): string {
  switch (failure) {
    case "pip-missing":
      return `FX Trace: ${python} has no pip, so fx-lsp was not installed. ${noPipAdvice(python)}`;
    case "externally-managed":
      return (
        `FX Trace: ${python} is managed by the system (PEP 668), so pip installs nothing into it. ` +
        `Create a virtual environment (${python} -m venv .venv), select it or set fxLsp.interpreter to it, ` +
        `and the extension offers the install there.`
      );
    case "other":
      return `FX Trace: installing fx-lsp into ${python} failed (pip exited with ${exitCode ?? "a signal"}): see the log.`;
  }
}

export function pipInstallArgs(wheel: string): string[] {
  return ["-m", "pip", "install", "--disable-pip-version-check", "--no-input", wheel];
}

export type PipResult = { ok: true } | { ok: false; failure: PipFailure; exitCode: number | null; detail: string };

/** `<python> -m pip install <wheel>`; each line pip prints goes to `onLine` as it comes. */
export function runPipInstall(
  python: string,
  wheel: string,
  options: ProcessOptions,
  onLine: (line: string) => void,
): Promise<PipResult> {
  return new Promise((resolve) => {
    const child = spawn(python, pipInstallArgs(wheel), { ...options, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    const pending = { stdout: "", stderr: "" };
    const take = (stream: "stdout" | "stderr", chunk: Buffer): void => {
      const text = pending[stream] + chunk.toString("utf8");
      output += chunk.toString("utf8");
      const lines = text.split(/\r?\n/);
      pending[stream] = lines.pop() ?? "";
      for (const line of lines) if (line.trim() !== "") onLine(line);
    };
    child.stdout.on("data", (chunk: Buffer) => take("stdout", chunk));
    child.stderr.on("data", (chunk: Buffer) => take("stderr", chunk));
    child.on("error", (error) => resolve({ ok: false, failure: "other", exitCode: null, detail: error.message }));
    child.on("close", (code) => {
      for (const rest of [pending.stdout, pending.stderr]) if (rest.trim() !== "") onLine(rest);
      if (code === 0) resolve({ ok: true });
      else resolve({ ok: false, failure: classifyPipFailure(output), exitCode: code, detail: output.trim().split("\n").at(-1) ?? "" });
    });
  });
}
