"""``fx-lsp mcp``'s server: fx-lsp's checks as MCP tools for coding agents (``server``, on the
``mcp`` SDK of the ``fx-lsp[mcp]`` extra; ``tools``, what they do: the engine's API,
``fxcore.api``, on a warm engine). The command line starts it (``fx_lsp.cli.mcp_command``); it
imports nothing of the command line."""
