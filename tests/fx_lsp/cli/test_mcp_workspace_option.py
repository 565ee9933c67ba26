"""``fx-lsp mcp --workspace DIR`` naming no folder: one line and exit status 2, before any
server starts."""

from __future__ import annotations

from pathlib import Path

from cli_support import fx_lsp


def test_a_workspace_that_is_no_folder_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "file.py").write_text("")
    for given, why in (("missing", "no such folder"), ("file.py", "not a folder")):
        completed = fx_lsp("mcp", "--workspace", given, cwd=tmp_path)
        assert completed.returncode == 2, completed
        assert completed.stderr.splitlines() == [f"fx-lsp mcp: --workspace {given}: {why}"]
        assert completed.stdout == ""
