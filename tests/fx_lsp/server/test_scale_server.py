"""The server at scale, through the real server over stdio: a file event updates the call-site
index (a constructor call added to a README, or deleted, reaches the open class without a
restart); a huge
class's ``fxLsp/graph`` and ``fxLsp/generatedCode`` answers are bounded and paged; and a hover
sent after such a request is answered before it (the answers are built off the event loop)."""

from __future__ import annotations

import asyncio
import pathlib
from typing import Any

from lsprotocol import types
from pygls.uris import from_fs_path

from lsp_support import new_project, session

# The check is one the constructor search cannot solve (it evaluates no crc32), so only a
# README call builds the class.
NEEDS_WIDTH = """import zlib

from torch import nn


class NeedsWidth(nn.Module):
    def __init__(self, width):
        super().__init__()
        assert zlib.crc32(str(width).encode()) == zlib.crc32(b"12"), "only the README's width"
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        return self.proj(x) * len(x)
"""

README = """# Example

```python
model = NeedsWidth(width=12)
```
"""

#: Traced nodes of ``Wide``: x, then per iteration a get_attr of the buffer and an add; output.
ITERATIONS = 3_000
NAME = "buffer_" + "b" * 200
WIDE = f"""import torch
from torch import nn


class Wide(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("{NAME}", torch.ones(4))

    def forward(self, x):
        for _ in range({ITERATIONS}):
            x = x + self.{NAME}
        return x
"""
WIDE_NODES = 2 * ITERATIONS + 2
#: The server's bounds (fx_lsp.features.graph_view.NODE_LIMIT,
#: fx_lsp.features.code_lens.GENERATED_CODE_LIMIT).
NODE_LIMIT = 5_000
GENERATED_CODE_LIMIT = 1_000_000


async def test_a_readme_call_added_or_deleted_reaches_the_open_class(
    tmp_path: pathlib.Path,
) -> None:
    workspace = new_project(tmp_path)
    model = workspace / "model.py"
    model.write_text(NEEDS_WIDTH)
    async with session(workspace) as client:
        uri = client.open(model)
        before = await client.diagnostics_for(uri, version=1)
        assert not any(d.code == "FX002" for d in before)  # not built: its width is unknown

        readme = workspace / "README.md"
        readme.write_text(README)
        published = len(client.published)
        client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
            types.FileEvent(uri=from_fs_path(str(readme)), type=types.FileChangeType.Created)]))
        # Built with the README's arguments, the class is traced: its len() is found.
        after = await client.diagnostics_for(uri, version=1, after=published, timeout=60)
        assert any(d.code == "FX002" for d in after)

        readme.unlink()
        published = len(client.published)
        client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
            types.FileEvent(uri=from_fs_path(str(readme)), type=types.FileChangeType.Deleted)]))
        gone = await client.diagnostics_for(uri, version=1, after=published, timeout=60)
        assert not any(d.code == "FX002" for d in gone)


async def opened_wide(client: Any, workspace: pathlib.Path) -> str:
    wide = workspace / "wide.py"
    wide.write_text(WIDE)
    uri = client.open(wide)
    await client.diagnostics_for(uri, version=1, timeout=120)
    return uri


async def test_a_huge_graph_is_sent_a_page_at_a_time(tmp_path: pathlib.Path) -> None:
    workspace = new_project(tmp_path)
    async with session(workspace) as client:
        uri = await opened_wide(client, workspace)
        first = await client.protocol.send_request_async(
            "fxLsp/graph", {"uri": uri, "className": "Wide"})
        rest = await client.protocol.send_request_async(
            "fxLsp/graph", {"uri": uri, "className": "Wide", "offset": NODE_LIMIT})
        small = await client.protocol.send_request_async(
            "fxLsp/graph", {"uri": uri, "className": "Wide", "limit": 10, "offset": 2})
        code = await client.protocol.send_request_async(
            "fxLsp/generatedCode", {"uri": uri, "className": "Wide"})

    assert first["status"] == "traceable"
    assert len(first["nodes"]) == NODE_LIMIT
    assert (first["total"], first["offset"], first["truncated"]) == (WIDE_NODES, 0, True)
    assert f"Showing nodes 1-5,000 of the {WIDE_NODES:,}" in first["notes"][0]
    assert len(rest["nodes"]) == WIDE_NODES - NODE_LIMIT
    assert (rest["offset"], rest["truncated"]) == (NODE_LIMIT, False)
    assert rest["nodes"][-1]["name"] == "output"
    assert [node["name"] for node in small["nodes"]] == \
        [node["name"] for node in first["nodes"][2:12]]
    assert small["truncated"] is True

    # The generated code is cut at a line, with a last line saying what was left out.
    assert code["nodeCount"] == WIDE_NODES
    text = code["code"]
    assert len(text) <= GENERATED_CODE_LIMIT + 200
    last = text.rstrip("\n").splitlines()[-1]
    assert last.startswith("# fx-lsp: ") and "of generated code left out" in last
    assert sum(len(nodes) for nodes in code["lineNodes"].values()) <= NODE_LIMIT


async def test_a_hover_is_answered_while_a_huge_graph_is_built(tmp_path: pathlib.Path) -> None:
    workspace = new_project(tmp_path)
    async with session(workspace) as client:
        uri = await opened_wide(client, workspace)
        answered: list[str] = []

        async def request(name: str, method: str, params: Any) -> None:
            await client.protocol.send_request_async(method, params)
            answered.append(name)

        hover = types.HoverParams(text_document=types.TextDocumentIdentifier(uri=uri),
                                  position=types.Position(line=4, character=8))
        await asyncio.gather(
            request("graph", "fxLsp/graph", {"uri": uri, "className": "Wide"}),
            request("code", "fxLsp/generatedCode", {"uri": uri, "className": "Wide"}),
            request("hover", types.TEXT_DOCUMENT_HOVER, hover),
        )

    # Sent last, answered first: the big answers did not hold up the event loop.
    assert answered[0] == "hover", answered
