"""The integrations a user copies (integrations/): each file parses, names the ``fx-lsp``
command the package installs with arguments its parser accepts, and is in docs/agents.md with
the command that installs it."""

from __future__ import annotations

import json
import pathlib
import tomllib

import pytest

from fx_lsp.cli.arguments import build_parser

REPO = pathlib.Path(__file__).parents[2]
INTEGRATIONS = REPO / "integrations"
PLUGIN = INTEGRATIONS / "claude-code" / "fx-lsp" / ".claude-plugin" / "plugin.json"
MARKETPLACE = INTEGRATIONS / "claude-code" / ".claude-plugin" / "marketplace.json"
VSCODE = INTEGRATIONS / "vscode" / ".vscode" / "mcp.json"
GENERIC = INTEGRATIONS / "mcp-clients" / "mcp.json"


def _servers() -> list[tuple[str, dict[str, object]]]:
    plugin = json.loads(PLUGIN.read_text())
    return [
        *((f"plugin lspServers {name}", server) for name, server in plugin["lspServers"].items()),
        *((f"plugin mcpServers {name}", server) for name, server in plugin["mcpServers"].items()),
        *((f"vscode {name}", server)
          for name, server in json.loads(VSCODE.read_text())["servers"].items()),
        *((f"generic {name}", server)
          for name, server in json.loads(GENERIC.read_text())["mcpServers"].items()),
    ]


@pytest.mark.parametrize(("where", "server"), _servers(), ids=lambda value: str(value)[:30])
def test_each_server_names_an_installed_command(where: str, server: dict[str, object]) -> None:
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert server["command"] in scripts, where
    arguments = [str(argument).replace("${workspaceFolder}", str(REPO))
                 for argument in server["args"]]  # type: ignore[attr-defined]
    parsed = build_parser().parse_args(arguments)
    assert parsed.command in ("serve", "mcp"), where
    if parsed.command == "serve":
        assert server["extensionToLanguage"] == {".py": "python", ".pyi": "python"}
    if "type" in server:  # VS Code's format names the transport
        assert server["type"] == "stdio"


def test_the_marketplace_lists_the_plugin() -> None:
    marketplace = json.loads(MARKETPLACE.read_text())
    (entry,) = marketplace["plugins"]
    assert entry["name"] == json.loads(PLUGIN.read_text())["name"]
    assert (MARKETPLACE.parent.parent / entry["source"] / ".claude-plugin" / "plugin.json"
            ).resolve() == PLUGIN.resolve()


def test_the_agents_page_says_how_to_install_each() -> None:
    readme = (REPO / "docs" / "agents.md").read_text()
    marketplace = json.loads(MARKETPLACE.read_text())
    assert "/plugin marketplace add ./integrations/claude-code" in readme
    assert f"/plugin install fx-lsp@{marketplace['name']}" in readme
    for path in (VSCODE, GENERIC):
        assert str(path.relative_to(REPO)) in readme
    assert "pip install 'fx-lsp[mcp]'" in readme
