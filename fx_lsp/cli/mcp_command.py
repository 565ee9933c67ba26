"""``fx-lsp mcp``: the checks as MCP tools for coding agents (``fx_lsp.mcp_server``, on the
``mcp`` SDK of the ``fx-lsp[mcp]`` extra). The server's module, which imports the SDK, is
imported when the command runs, once the SDK is known to be there: the command line runs
without the extra, and this command says what to install."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from fx_lsp.escaping import terminal

#: What ``fx-lsp mcp`` says, once, without the extra (or with an SDK older than 2.x).
MISSING_EXTRA = ("fx-lsp mcp: the MCP server needs the official mcp SDK 2.x: "
                 "pip install 'fx-lsp[mcp]'")


def mcp_command(parser: argparse.ArgumentParser, arguments: argparse.Namespace) -> int:
    workspace = arguments.workspace
    if not os.path.isdir(workspace):
        why = "not a folder" if os.path.lexists(workspace) else "no such folder"
        print(f"fx-lsp mcp: --workspace {terminal(workspace)}: {why}", file=sys.stderr)
        return 2
    try:
        # The 2.x SDK's server (1.x has no ``mcpserver``).
        importlib.import_module("mcp.server.mcpserver")
    except ImportError:
        print(MISSING_EXTRA, file=sys.stderr)
        return 2
    from fx_lsp.mcp_server.server import serve_mcp

    return serve_mcp(workspace, trusted=not arguments.untrusted)
