// The capture modes the `fxLsp.modes` setting chooses from, as the modes status item and its
// quick pick show them; pure (no `vscode` import) so that the unit tests run it.

/** The built-in capture modes, in the order the server checks them. */
export const CAPTURE_MODES: readonly { mode: string; description: string }[] = [
  { mode: "fx", description: "torch.fx symbolic tracing" },
  { mode: "export", description: "torch.export" },
  { mode: "compile", description: "torch.compile graph breaks" },
  { mode: "onnx", description: "torch.onnx.export (dynamo=True)" },
];

/** A graph view's title: the class, and the capture mode when it is not plain fx. */
export function graphTitle(className: string, mode: string | undefined): string {
  return mode === undefined || mode === "fx" ? `Graph: ${className}` : `Graph: ${className} (${mode})`;
}

/** The modes status item's text: `FX: fx+export`. */
export function modesText(modes: readonly string[]): string {
  return `FX: ${modes.join("+")}`;
}

export interface ModeItem {
  label: string;
  description: string;
  picked: boolean;
}

/** The quick pick's items: every built-in mode, and any other configured one (a registered
 * extra mode), those of the current setting picked. */
export function modeItems(current: readonly string[]): ModeItem[] {
  const known = CAPTURE_MODES.map(({ mode, description }) => ({ label: mode, description, picked: current.includes(mode) }));
  const others = current
    .filter((mode) => !CAPTURE_MODES.some((known) => known.mode === mode))
    .map((mode) => ({ label: mode, description: "", picked: true }));
  return [...known, ...others];
}

/** The setting's new value from the items picked, in the items' order; `undefined` when none
 * is picked (the setting needs at least one mode, so the pick changes nothing). */
export function pickedModes(picked: readonly { label: string }[], items: readonly ModeItem[]): string[] | undefined {
  const labels = new Set(picked.map((item) => item.label));
  const modes = items.filter((item) => labels.has(item.label)).map((item) => item.label);
  return modes.length > 0 ? modes : undefined;
}
