"""``fx-lsp mcp``'s tools refuse what the command line refuses, with the reason in the tool's
error: a revision that is an option for git, a revision holding a link out of it, a baseline
nested too deep (before anything is traced)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import tempfile

import pytest

pytest.importorskip("mcp", reason="the mcp extra (pip install 'fx-lsp[mcp]')")
from mcp import ClientSession
from mcp_sessions import mcp_session

from engine_support import USES_LEN_AND_FINE


def git(root: pathlib.Path, *arguments: str) -> None:
    subprocess.run(["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@t",
                    *arguments], check=True, capture_output=True)


async def _error(session: ClientSession, tool: str, arguments: dict[str, object]) -> str:
    result = await session.call_tool(tool, arguments)
    assert result.is_error, (tool, arguments, result)
    return " ".join(part.text for part in result.content if part.type == "text")


async def test_refusals_carry_their_reason(tmp_path: pathlib.Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "pyproject.toml").write_text("[project]\nname = 'w'\n")
    (workspace / "models.py").write_text(USES_LEN_AND_FINE)
    os.symlink("../..", workspace / "escape")
    git(workspace, "init", "-q")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-qm", "one")
    git(workspace, "rm", "-q", "escape")
    (workspace / "models.py").write_text(USES_LEN_AND_FINE.replace("len(x)", "x.shape[0]"))
    git(workspace, "commit", "-qam", "two")
    written = tmp_path / "written"
    with tempfile.TemporaryFile("w+") as errors:
        async with mcp_session(workspace, errors) as session:
            for option in (f"--output={written}", "-c"):
                assert f"{option!r} is not a revision" in await _error(
                    session, "diff", {"base": option})
            assert not written.exists()
            linked = await _error(session, "diff", {"base": "HEAD~1"})
            assert "'escape', a symbolic link to '../..' outside the revision" in linked
            (workspace / ".fx-lsp-baseline.json").write_text("[" * 100_000 + "]" * 100_000)
            deep = await _error(session, "check", {"paths": ["models.py"]})
            assert ".fx-lsp-baseline.json" in deep, deep
            assert "nested more than 64 levels deep" in deep, deep
