"""``fx-lsp mcp``, reached by name: the MCP server (``fx_lsp.mcp_server``) is the room above the
command line, whose code its tools run, so the command line does not import it."""

from __future__ import annotations

import argparse
import importlib


def mcp_by_name(parser: argparse.ArgumentParser, arguments: argparse.Namespace) -> int:
    return importlib.import_module("fx_lsp.mcp_server").mcp_command(parser, arguments)
