"""The editor's settings, generated: the docs site's page (``editor-settings.md``, added as the
site is built) and the table of the extension's page on the Marketplace
(``vscode-client/README.md``, committed: ``python3 scripts/editor_settings.py`` writes it, and
tests/project/test_docs_generated.py fails while it is stale). Both come from the extension's
manifest (``vscode-client/package.json``'s ``contributes.configuration``) and the language
server's own settings (``fx_lsp.features.initialization_options``), so that no table of them is
written by hand."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # run as a script from anywhere: the checkout documented
    sys.path.insert(0, str(REPO_ROOT))

from lsprotocol.types import DiagnosticSeverity  # noqa: E402

from fx_lsp.features.initialization_options import SEVERITIES, documented_settings  # noqa: E402
from fxcore.rules.documentation import DOCS_URL  # noqa: E402
from fxcore.workspace.config_keys import PROJECT_KEY_NAMES  # noqa: E402

MANIFEST = REPO_ROOT / "vscode-client" / "package.json"
EXTENSION_README = REPO_ROOT / "vscode-client" / "README.md"
#: What stands around the table in the extension's page: the table is rewritten between them.
TABLE_START = ("<!-- Generated from package.json by scripts/editor_settings.py: run it after "
               "changing a setting. -->")
TABLE_END = "<!-- End of the generated table. -->"
#: The VS Code settings' prefix (``contributes.configuration``'s keys).
SECTION = "fxLsp."


def manifest_settings() -> dict[str, dict[str, Any]]:
    """The extension's settings by their name (``fxLsp.run``), in the manifest's order."""
    manifest = json.loads(MANIFEST.read_text(encoding="utf-8"))
    return manifest["contributes"]["configuration"]["properties"]


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _value(value: Any) -> str:
    """A default as JSON writes it, in a code span: ``"onSave"``, ``20``, ``["fx"]``."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, tuple):
        value = list(value)
    if isinstance(value, DiagnosticSeverity):
        value = next(name for name, number in SEVERITIES.items() if number == value)
    return f"`{json.dumps(value)}`"


def _meaning(setting: dict[str, Any]) -> str:
    """The manifest's description, each choice's own after it."""
    text = setting.get("markdownDescription") or setting["description"]
    choices = zip(setting.get("enum", []), setting.get("enumDescriptions", []), strict=False)
    described = " ".join(f"`{choice}`: {meaning}" for choice, meaning in choices)
    return _cell(f"{text} {described}" if described else text)


def vscode_table() -> str:
    """The VS Code settings: name, default and meaning, as the manifest gives them."""
    rows = [f"| `{name}` | {_value(setting['default'])} | {_meaning(setting)} |"
            for name, setting in manifest_settings().items()]
    return "\n".join(["| Setting | Default | Meaning |", "| --- | --- | --- |", *rows]) + "\n"


def project_key(client_key: str) -> str | None:
    """The ``[tool.fx-lsp]`` key that overrides a setting (``showNotTraced``:
    ``show-not-traced``), where there is one."""
    kebab = re.sub(r"(?<!^)([A-Z])", r"-\1", client_key).lower()
    return kebab if kebab in PROJECT_KEY_NAMES else None


def server_table() -> str:
    """The language server's settings, as any editor sends them: the VS Code setting that sends
    each, the ``[tool.fx-lsp]`` key that overrides it, its default and its values."""
    vscode = manifest_settings()
    rows = []
    for client_key, expected, default in documented_settings():
        name = f"{SECTION}{client_key}"
        sent_by = f"[`{name}`](#{name.lower().replace('.', '')})" if name in vscode else "none"
        key = project_key(client_key)
        project = f"[`{key}`](configuration.md#{key})" if key else "none"
        rows.append(f"| `{client_key}` | {sent_by} | {project} | {_value(default)} | "
                    f"{_cell(expected)} |")
    header = ["| Setting | VS Code | `[tool.fx-lsp]` | Default | Values |",
              "| --- | --- | --- | --- | --- |"]
    return "\n".join([*header, *rows]) + "\n"


def settings_page() -> str:
    """The docs site's ``editor-settings.md``: a heading per VS Code setting (so that the
    server's table links to each), then the server's table."""
    vscode = "\n".join(f"### `{name}`\n\n- Default: {_value(setting['default'])}\n\n"
                       f"{_meaning(setting)}\n" for name, setting in manifest_settings().items())
    return (
        "# Editor settings\n\n"
        "Generated from the extension's manifest (`vscode-client/package.json`) and the "
        "language server's settings (`fx_lsp/features/initialization_options.py`). A "
        "`[tool.fx-lsp]` key in the workspace's `pyproject.toml` wins over the setting it "
        "names ([Configuration](configuration.md)); see [In the editor](editor.md) for what "
        "each does in use.\n\n"
        f"## VS Code\n\n{vscode}\n"
        "## Any editor\n\n"
        "The language server reads these from `initializationOptions` and from "
        "`workspace/didChangeConfiguration` (`settings.fxLsp`, or a flat object); the VS Code "
        "extension sends them from its settings and `trusted` from the workspace's trust.\n\n"
        f"{server_table()}"
    )


def readme_with_table(readme: str) -> str:
    """The extension's page with its settings table as the manifest makes it now."""
    before, start, rest = readme.partition(TABLE_START)
    _, end, after = rest.partition(TABLE_END)
    if not start or not end:
        raise ValueError(f"{EXTENSION_README} lacks the lines {TABLE_START!r} and {TABLE_END!r}")
    note = (f"A `[tool.fx-lsp]` key wins over its setting: see the [editor settings]"
            f"({DOCS_URL}editor-settings/) and the [configuration]({DOCS_URL}configuration/).")
    return f"{before}{start}\n{vscode_table()}\n{note}\n{end}{after}"


def main() -> int:
    readme = EXTENSION_README.read_text(encoding="utf-8")
    updated = readme_with_table(readme)
    if updated != readme:
        EXTENSION_README.write_text(updated, encoding="utf-8")
        print(f"wrote {EXTENSION_README.relative_to(REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
