"""``fx-lsp graph PATH::Class -o graph.html`` as a real subprocess: the page embeds the class's
graph (node names equal torch.fx's) and the drawing script, allows no network access, and the
command says clearly when there is no such class or no graph. (The page drawn in headless
Chromium: vscode-client/e2e/graph-html.e2e.test.mjs.)"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import torch.fx
from torch import nn

from fx_lsp.cli.graph_html import POLICY
from fx_lsp.features.graph_view import NODE_LIMIT

from cli_support import fx_lsp

MODEL = '''import torch
from torch import nn


class Net(nn.Module):
    """</script><script>alert(1)</script> in a docstring stays text."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x):
        return torch.relu(self.fc(x))


class NeedsArgs(nn.Module):
    def __init__(self, width, depth):
        super().__init__()
        self.fc = nn.Linear(width, depth)

    def forward(self, x):
        return self.fc(x)
'''


class Net(nn.Module):  # the same forward, for plain torch.fx's node names
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


def graph(tmp_path: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return fx_lsp("graph", *arguments, "--no-cache", cwd=tmp_path)


def embedded_data(page: str) -> dict:
    match = re.search(r"<script>window\.FX_GRAPH = (.*?);</script>", page, re.DOTALL)
    assert match is not None
    return json.loads(match.group(1).replace("<\\/", "</"))


def test_writes_a_self_contained_page(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.fx-lsp]\n")
    (tmp_path / "net.py").write_text(MODEL)
    completed = graph(tmp_path, "net.py::Net", "-o", "out.html")
    assert completed.returncode == 0, completed.stderr
    assert "out.html: net:Net, traceable, 4 nodes" in completed.stderr
    page = (tmp_path / "out.html").read_text()
    assert f'content="{POLICY}"' in page
    assert "default-src 'none'" in POLICY
    assert not re.search(r"(src|href)=\"https?:", page)  # nothing to fetch
    assert page.count("</script>") == 2  # the data and the script, neither ended early
    data = embedded_data(page)
    assert [node["name"] for node in data["nodes"]] == [
        node.name for node in torch.fx.symbolic_trace(Net()).graph.nodes]
    assert data["className"] == "Net" and data["status"] == "traceable"
    assert "window.FX_GRAPH" in page and "fx-graph-drawn" in page  # the bundled drawing code

    # Both classes have a graph (NeedsArgs with guessed arguments): the class must be named.
    ambiguous = graph(tmp_path, "net.py")
    assert ambiguous.returncode == 1
    assert "name the class as PATH::Class; the file has Net, NeedsArgs" in ambiguous.stderr


def test_says_why_there_is_no_graph(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.fx-lsp]\nguess-arguments = false\n")
    (tmp_path / "net.py").write_text(MODEL)
    unknown = graph(tmp_path, "net.py::Nope")
    assert unknown.returncode == 1
    assert "no class Nope among the file's classes: Net, NeedsArgs" in unknown.stderr
    not_traced = graph(tmp_path, "net.py::NeedsArgs")
    assert not_traced.returncode == 1 and "NeedsArgs has no graph" in not_traced.stderr
    missing = graph(tmp_path, "nothere.py::Net")
    assert missing.returncode == 2 and "give a Python file" in missing.stderr
    assert not list(tmp_path.glob("*.html"))
    # The only class with a graph needs no name; the default file is named after it.
    assert graph(tmp_path, "net.py").returncode == 0
    assert [path.name for path in tmp_path.glob("*.html")] == ["Net.graph.html"]


UNROLLED = """\
import torch
from torch import nn


class Unrolled(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(7_000):
            x = x + 1
        return x
"""


def test_a_huge_graph_is_drawn_up_to_the_cap_with_a_note(tmp_path: Path) -> None:
    """The page holds the first NODE_LIMIT nodes, as the editor's first page does, and says
    how many were left out: a 100,000-node class made a 28 MB page drawn whole."""
    (tmp_path / "unrolled.py").write_text(UNROLLED)
    completed = graph(tmp_path, "unrolled.py::Unrolled", "-o", "out.html")
    assert completed.returncode == 0, completed.stderr
    assert "7,002 nodes" in completed.stderr or "7002 nodes" in completed.stderr
    data = embedded_data((tmp_path / "out.html").read_text())
    assert len(data["nodes"]) == NODE_LIMIT and data["total"] == 7_002 and data["truncated"]
    assert f"Showing nodes 1-{NODE_LIMIT:,} of the 7,002" in " ".join(data["notes"])
