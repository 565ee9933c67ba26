"""``fx-lsp mcp``'s ``fix`` tool with ``apply`` through the official SDK's client over stdio:
the fixed file keeps every byte but its fixed lines (Windows line ends, a UTF-8 byte order
mark, no last line end), and a fix the server cannot write is a tool error in one line, the
file as it was, no temporary left and no traceback in the server's log."""

from __future__ import annotations

import pathlib
import tempfile

import pytest

mcp = pytest.importorskip("mcp", reason="the mcp extra (pip install 'fx-lsp[mcp]')")
from mcp_sessions import mcp_session  # noqa: E402
from unwritable_files import unwritable  # noqa: E402

LINES = ["import torch", "from torch import nn", "", "", "class UsesLen(nn.Module):",
         "    def forward(self, x):", "        return x * len(x)"]
FIXED = ["import torch", "from torch import nn", "import torch.fx", "",
         'torch.fx.wrap("len")', *LINES[2:]]
BOM = b"\xef\xbb\xbf"


def crlf(lines: list[str]) -> bytes:
    """The lines with Windows line ends, the last without one."""
    return "\r\n".join(lines).encode()


def workspace(tmp_path: pathlib.Path, name: str) -> pathlib.Path:
    folder = tmp_path / name
    folder.mkdir()
    (folder / "pyproject.toml").write_text("[project]\nname = 'kept'\n")
    (folder / "models.py").write_bytes(BOM + crlf(LINES))
    return folder


@pytest.mark.slow
async def test_fix_keeps_the_bytes_it_does_not_fix_and_says_when_it_cannot_write(
        tmp_path: pathlib.Path) -> None:
    fixed, refused = workspace(tmp_path, "fixed"), workspace(tmp_path, "refused")
    with tempfile.TemporaryFile("w+") as errors:
        async with mcp_session(fixed, errors) as session:
            done = await session.call_tool("fix", {"path": "models.py", "code": "FX002",
                                                   "apply": True})
            assert not done.is_error, done.content
            assert done.structured_content is not None and done.structured_content["applied"]
        assert (fixed / "models.py").read_bytes() == BOM + crlf(FIXED)

        models = refused / "models.py"
        with unwritable(models) as reason:
            async with mcp_session(refused, errors) as session:
                result = await session.call_tool("fix", {"path": "models.py", "code": "FX002",
                                                         "apply": True})
            assert models.read_bytes() == BOM + crlf(LINES)
            assert sorted(path.name for path in refused.iterdir()
                          if path.name != ".fx-lsp-cache") == ["models.py", "pyproject.toml"]
        assert result.is_error, result.content
        assert [part.text for part in result.content if part.type == "text"] == [
            f"Error executing tool fix: cannot write models.py: {reason}; it is unchanged"]
        errors.seek(0)
        log = errors.read()
        assert "Traceback" not in log, log
