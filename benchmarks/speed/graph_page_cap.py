"""The page ``fx-lsp graph`` writes for a 100,000-node class, drawn whole (the baseline, as
before the cap) and capped at ``graph_view.NODE_LIMIT`` nodes, in the same run: the page's
size and the time to build it. The class is an unrolled chain of additions, each node made on
a line of a real source file, with shapes and a submodule scope, as a traced loop gives.

    python3 -m benchmarks run speed graph_page_cap -- [--nodes 100000] [--runs 3]

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.provenance import machine_line
from benchmarks.tables import emit, markdown
from fx_lsp.cli import graph_html
from fx_lsp.cli.graph_html import html_page
from fx_lsp.features import graph_view
from fxcore.model.results import GraphNode, ModuleResult
from fxcore.workspace.paths import source_text, split_lines


def unrolled(path: str, nodes: int) -> ModuleResult:
    graph = [GraphNode("x", "placeholder", "x", shape="f32[2, 8]")]
    graph += [GraphNode(f"add_{i}", "call_function", "operator.add",
                        inputs=["x" if i == 0 else f"add_{i - 1}"], shape="f32[2, 8]",
                        scope=["blocks.0"], path=path, line=7)
              for i in range(nodes)]
    graph.append(GraphNode("output", "output", "output", inputs=[graph[-1].name]))
    return ModuleResult(path=path, line=5, column=7, end_line=5, end_column=15,
                        class_name="Unrolled", qualified_name="model:Unrolled",
                        status="traceable", node_count=len(graph), graph=graph)


def build(module: ModuleResult, limit: int | None) -> tuple[float, int]:
    def lines_of(path: str) -> list[str]:
        return split_lines(source_text(path, {}) or "")

    started = time.perf_counter()
    page = html_page(graph_view.graph(module, lines_of, "utf-16", limit=limit))
    return time.perf_counter() - started, len(page.encode())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "model.py"
        source.write_text("import torch\nfrom torch import nn\n\n\nclass Unrolled(nn.Module):\n"
                          "    def forward(self, x):\n        for _ in range(100_000): x = x + 1"
                          "\n        return x\n")
        module = unrolled(str(source), arguments.nodes)
        whole = [build(module, None) for _ in range(arguments.runs)]
        capped = [build(module, graph_view.NODE_LIMIT) for _ in range(arguments.runs)]
        cli_page = len(graph_html.page(module).encode())  # the CLI's own call
    print(machine_line())
    print(f"{arguments.nodes:,}-node class, {arguments.runs} runs each")
    rows = []
    for name, runs in (("drawn whole (baseline)", whole),
                       (f"capped at {graph_view.NODE_LIMIT:,} nodes", capped)):
        seconds = statistics.median(run[0] for run in runs)
        rows.append([name, f"{runs[0][1] / 1e6:.2f} MB", f"{seconds:.2f} s"])
    ratio_size = whole[0][1] / capped[0][1]
    ratio_time = statistics.median(r[0] for r in whole) / statistics.median(r[0] for r in capped)
    rows.append(["capped vs whole", f"{ratio_size:.1f}x smaller", f"{ratio_time:.1f}x faster"])
    emit("graph_page_cap", markdown(
        [f"{arguments.nodes:,}-node class", "page", f"built in (median of {arguments.runs})"],
        rows))
    print(f"fx-lsp graph's page: {cli_page / 1e6:.2f} MB")

if __name__ == "__main__":
    main()
