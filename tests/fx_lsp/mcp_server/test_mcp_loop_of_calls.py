"""MCP ``check`` without compile mode's loop of calls: the single call's findings, and
``pending`` naming the loop it lacks; with it (the default), the loop's findings too and no
``pending``, the command line's report."""

from __future__ import annotations

import pathlib
import tempfile

import pytest

mcp = pytest.importorskip("mcp", reason="the mcp extra (pip install 'fx-lsp[mcp]')")
from mcp_sessions import mcp_session  # noqa: E402
from recompiling_block import RECOMPILES  # noqa: E402


def _codes(report: dict | None) -> set[str]:
    assert report is not None
    return {problem["code"] for problem in report["diagnostics"]}


@pytest.mark.slow  # the loop of calls recompiles for seconds
async def test_check_without_the_loop_names_it_pending(tmp_path: pathlib.Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "pyproject.toml").write_text("[project]\nname = 'w'\n")
    (workspace / "block.py").write_text(RECOMPILES)
    with tempfile.TemporaryFile("w+") as errors:
        async with mcp_session(workspace, errors) as session:
            single = await session.call_tool("check", {
                "paths": ["block.py"], "modes": ["compile"], "loop_of_calls": False})
            looped = await session.call_tool("check", {"paths": ["block.py"],
                                                       "modes": ["compile"]})
    assert not single.is_error and not looped.is_error, (single.content, looped.content)
    assert single.structured_content is not None and looped.structured_content is not None
    assert single.structured_content["pending"] == ["compile-loop"]
    assert "pending" not in looped.structured_content
    assert "GB0059" in _codes(single.structured_content)
    assert "FX506" not in _codes(single.structured_content)
    assert _codes(looped.structured_content) == _codes(single.structured_content) | {"FX506"}
