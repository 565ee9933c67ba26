"""The CLI, the servers and the engine's API never import what runs next to user code
(``fxcore.worker``), nor torch: the worker's modules run only in forked children, and the host
stays fast to start."""

from __future__ import annotations

import json
import subprocess
import sys

HOST_MODULES = ["fx_lsp.cli.main", "fx_lsp.server.language_server", "fx_lsp.cli.progress",
                "fx_lsp.cli.output_formats", "fx_lsp.cli.graph_html", "fx_lsp.cli.fixing",
                "fx_lsp.cli.shards", "fx_lsp.mcp_server.tools", "fxcore.api.check",
                "fxcore.api.fixes", "fxcore.api.graph", "fxcore.api.revision_diff",
                "fxcore.host.engine", "fxcore.host.cache", "fxcore.reporting.report",
                "fxcore.fixing.fix_apply"]


def test_the_host_imports_no_worker_module_and_no_torch() -> None:
    probe = (f"import importlib, json, sys\n"
             f"for name in {HOST_MODULES!r}:\n"
             f"    importlib.import_module(name)\n"
             f"print(json.dumps(sorted(sys.modules)))\n")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=120, check=True)
    loaded = json.loads(run.stdout)
    assert [name for name in loaded if name.startswith("fxcore.worker.")] == []
    assert "torch" not in loaded
