"""The engine's API for the adapters: ``check``, ``explain``, ``graph``, ``fix`` and ``diff`` as
functions that return data (a run's results and report, a class's graph, planned edits, the
changes between two git revisions). The command line prints what they return; the MCP server
returns it; neither runs the other."""
