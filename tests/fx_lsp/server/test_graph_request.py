"""``fxLsp/graph`` through the real server: node names equal torch.fx's own, each node's
source line is right on helpers and on submodules defined in another file, scopes name the
submodules, and a failed class's recovered graph carries its failure on the failing line's
nodes."""

from __future__ import annotations

import pathlib
import sys

import pytest
import torch.fx
from pygls.uris import from_fs_path

from lsp_support import FxClient, new_project

BLOCKS = """import torch
from torch import nn


def gate(x):
    return torch.sigmoid(x) * x


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.proj = nn.Linear(width, width)

    def forward(self, x):
        return gate(self.proj(x)) + x
"""

NET = """import torch
from torch import nn

from pkg.blocks import Block


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block(16) for _ in range(2)])
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.head(x).softmax(-1)


class Branches(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(16, 4)

    def forward(self, x):
        y = self.head(x)
        if y.sum() > 0:
            y = y * 2
        return y.relu()
"""


def line_of(text: str, snippet: str) -> int:
    """0-based, as LSP counts."""
    return next(i for i, line in enumerate(text.splitlines()) if snippet in line)


def torch_fx_node_names(workspace: pathlib.Path) -> list[str]:
    sys.path.insert(0, str(workspace))
    try:
        from pkg.net import Net  # the test's own process; the server imports it in a worker

        return [node.name for node in torch.fx.symbolic_trace(Net()).graph.nodes]
    finally:
        sys.path.remove(str(workspace))
        for name in [m for m in sys.modules if m == "pkg" or m.startswith("pkg.")]:
            del sys.modules[name]


def write_workspace(tmp_path: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """The project, and its pkg/net.py (pkg/blocks.py beside it)."""
    workspace = new_project(tmp_path)
    (workspace / "pkg").mkdir()
    (workspace / "pkg" / "__init__.py").write_text("")
    (workspace / "pkg" / "blocks.py").write_text(BLOCKS)
    net = workspace / "pkg" / "net.py"
    net.write_text(NET)
    return workspace, net


@pytest.mark.asyncio(loop_scope="session")
async def test_graph_of_a_traceable_class(tmp_path: pathlib.Path, shared_client: FxClient) -> None:
    workspace, net = write_workspace(tmp_path)
    blocks_uri = from_fs_path(str(workspace / "pkg" / "blocks.py"))
    client = shared_client
    uri = client.open(net)
    await client.diagnostics_for(uri, version=1)
    result = await client.protocol.send_request_async(
        "fxLsp/graph", {"uri": uri, "className": "Net"})

    assert result["uri"] == uri and result["version"] == 1
    assert result["className"] == "Net" and result["status"] == "traceable"
    assert result["qualifiedName"] == "pkg.net:Net"
    nodes = {node["name"]: node for node in result["nodes"]}
    assert [node["name"] for node in result["nodes"]] == torch_fx_node_names(workspace)
    assert result["failures"] == [] and result["notes"] == []
    assert result["inputs"] == {"x": "float32[2, 8, 16]"} and result["inputsFrom"] == "inferred"
    assert result["outputShape"] == "float32[2, 8, 4]"

    # A submodule defined in another file, and the helper it calls there.
    projection = nodes["blocks_0_proj"]
    assert projection["op"] == "call_module" and projection["target"] == "blocks.0.proj"
    assert projection["scope"] == ["blocks.0"]
    assert projection["location"]["uri"] == blocks_uri
    assert projection["location"]["range"]["start"]["line"] == line_of(BLOCKS, "return gate(")
    sigmoid = nodes["sigmoid"]
    assert sigmoid["location"]["uri"] == blocks_uri
    assert sigmoid["location"]["range"]["start"] == {
        "line": line_of(BLOCKS, "torch.sigmoid"), "character": 4}
    assert sigmoid["inputs"] == ["blocks_0_proj"]
    assert sigmoid["shape"] == "float32[2, 8, 16]"
    assert nodes["sigmoid_1"]["scope"] == ["blocks.1"]
    assert result["scopes"] == {"blocks.0": "Block", "blocks.1": "Block"}

    # Nodes of the class's own file; the argument points at forward's signature.
    head = nodes["head"]
    assert head["location"]["uri"] == uri and head["scope"] == []
    assert head["location"]["range"]["start"]["line"] == line_of(NET, "return self.head(x)")
    assert nodes["x"]["location"]["range"]["start"]["line"] == line_of(NET, "def forward")
    assert nodes["output"]["location"] is None


@pytest.mark.asyncio(loop_scope="session")
async def test_graph_of_a_failed_class_and_of_no_class(
        tmp_path: pathlib.Path, shared_client: FxClient) -> None:
    _, net = write_workspace(tmp_path)
    client = shared_client
    uri = client.open(net)
    await client.diagnostics_for(uri, version=1)
    line = line_of(NET, "y = y * 2")  # a position inside the class names it too
    failed = await client.protocol.send_request_async(
        "fxLsp/graph", {"uri": uri, "position": {"line": line, "character": 8}})
    missing = await client.protocol.send_request_async(
        "fxLsp/graph", {"uri": uri, "className": "Nope"})
    unopened = await client.protocol.send_request_async(
        "fxLsp/graph", {"uri": uri + "x", "className": "Net"})

    assert failed["status"] == "failed"
    assert failed["notes"][0].startswith("The graph tracing recovered past the failures")
    (failure,) = failed["failures"]
    assert failure["code"] == "FX001" and failure["severity"] == "error"
    assert failure["location"]["range"]["start"]["line"] == line_of(NET, "if y.sum() > 0")
    names = [node["name"] for node in failed["nodes"]]
    assert names[:2] == ["x", "head"] and "relu" in names  # the graph goes on past the branch
    assert failure["nodes"] == ["sum_1", "gt"]  # the nodes made on the failing line
    assert missing is None and unopened is None
