"""How long the graph view takes to open for the Llama-2-7B-sized decoder (2,005 nodes) and a
ResNet-50 (177 nodes).

1. A real ``python -m fx_lsp serve`` over stdio opens ``models/llama.py`` and
   ``models/resnet50.py``; once each is traced, the ``fxLsp/graph`` request is timed
   ``--runs`` times (the server's side of opening the view: building the answer and sending
   it), with the answer's size.
2. Each answer is written into the HTML page ``fx-lsp graph`` writes, which runs the very
   script the VS Code webview runs, and opened ``--runs`` times in headless Chromium
   (``graph_open.mjs``): the time from navigation to the first drawing (parsing the data and
   the script included), then "Expand all" (refused over 400 boxes), "Collapse all", and a
   click that opens the first submodule.

The open time is the request plus the first drawing. Target: the Llama decoder
opens in under 2 s, with submodules collapsed by default.

    python3 -m benchmarks run editor graph_view -- [--runs 5]

Prints figures; asserts nothing. Needs node and vscode-client's npm packages (npm ci) and
Chromium (CHROMIUM, default /usr/bin/chromium).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import attrs
from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.protocol import LanguageServerProtocol
from pygls.uris import from_fs_path

from benchmarks.paths import MODELS
from benchmarks.provenance import machine_line
from benchmarks.tables import emit, markdown, met
from benchmarks.timing import describe, milliseconds
from fx_lsp.cli.graph_html import html_page

#: The page-opening script, beside this file.
OPEN_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "graph_open.mjs")
CLASSES = {"llama.py": "Llama", "resnet50.py": "ResNet50"}


@attrs.define
class RawResponse:
    """The answer kept as plain JSON: pygls would build a namedtuple class per object of an
    unknown result (seconds for 2,000 nodes, which VS Code's JSON.parse does not spend)."""

    id: Any
    jsonrpc: str
    result: Any = None


class RawProtocol(LanguageServerProtocol):
    def get_result_type(self, method: str) -> Any:
        return RawResponse if method == "fxLsp/graph" else super().get_result_type(method)


async def graph_answers(runs: int) -> dict[str, tuple[dict, list[float]]]:
    """File name -> (the fxLsp/graph answer, the request's durations)."""
    client = LanguageClient("graph-benchmark", "1", protocol_cls=RawProtocol)
    traced: dict[str, asyncio.Future[None]] = {}

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def published(params: types.PublishDiagnosticsParams) -> None:
        waiter = traced.get(params.uri)
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    for method in ("fxLsp/status", "fxLsp/traced"):
        client.feature(method)(lambda params: None)
    await client.start_io(sys.executable, "-m", "fx_lsp", "serve", "--stdio")
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(), root_uri=from_fs_path(MODELS),
        process_id=os.getpid()))
    client.initialized(types.InitializedParams())
    answers = {}
    for name, class_name in CLASSES.items():
        path = os.path.join(MODELS, name)
        uri = from_fs_path(path)
        traced[uri] = asyncio.get_running_loop().create_future()
        with open(path, encoding="utf-8") as handle:
            client.text_document_did_open(types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1,
                                                     text=handle.read())))
        await asyncio.wait_for(traced[uri], 300)
        durations, answer = [], None
        for _ in range(runs):
            started = time.perf_counter()
            answer = await client.protocol.send_request_async(
                "fxLsp/graph", {"uri": uri, "className": class_name})
            durations.append(time.perf_counter() - started)
        answers[name] = (answer, durations)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    arguments = parser.parse_args()
    print(machine_line())
    answers = asyncio.run(graph_answers(arguments.runs))
    folder = tempfile.mkdtemp(prefix="fx-lsp-graph-")
    files = []
    for name, (answer, durations) in answers.items():
        size = len(json.dumps(answer))
        print(f"{CLASSES[name]:9} {len(answer['nodes'])} nodes, answer {size / 1024:.0f} KiB; "
              f"fxLsp/graph request {describe(durations)}")
        files.append(os.path.join(folder, f"{CLASSES[name]}.html"))
        with open(files[-1], "w", encoding="utf-8") as handle:
            handle.write(html_page(answer))
    measured = subprocess.run(
        ["node", OPEN_SCRIPT, str(arguments.runs), *files],
        check=True, capture_output=True, text=True).stdout
    columns = []
    for line, (name, (answer, durations)) in zip(measured.splitlines(), answers.items(),
                                                 strict=True):
        figures = json.loads(line)
        drawn = [ms / 1e3 for ms in figures["drawn"]]
        print(f"{CLASSES[name]:9} first drawing, {figures['boxes']} boxes (collapsed)  "
              f"{describe(drawn)}")
        expanded = ("refused: " + figures["notice"] if figures["notice"]
                    else f"{figures['expandedBoxes']} boxes")
        print(f"{'':9} Expand all                      "
              f"{describe([ms / 1e3 for ms in figures['expand']])}; {expanded}")
        print(f"{'':9} Collapse all                    "
              f"{describe([ms / 1e3 for ms in figures['collapse']])}")
        print(f"{'':9} open one submodule, {figures['openedBoxes']} boxes "
              f"{describe([ms / 1e3 for ms in figures['openOne']])}")
        opened = statistics.median(durations) + statistics.median(drawn)
        print(f"{'':9} open time (request + first drawing, medians) {opened * 1e3:.0f} ms "
              f"(target < 2000 ms)")
        columns.append([
            f"{len(json.dumps(answer)) / 1024:.0f} KiB, {median_ms(durations)}",
            f"{figures['boxes']} boxes, {median_ms(drawn)}",
            f"**{opened * 1e3:.0f} ms** ({met('< 2 s', opened < 2)})",
            f"{expanded}, {median_ms([ms / 1e3 for ms in figures['expand']])}",
            median_ms([ms / 1e3 for ms in figures["collapse"]]),
            f"{figures['openedBoxes']} boxes, "
            f"{median_ms([ms / 1e3 for ms in figures['openOne']])}"])
    labels = ["`fxLsp/graph` answer", "first drawing (collapsed)",
              "**open time** (request + first drawing)", "Expand all", "Collapse all",
              "open one submodule"]
    emit("graph_view", markdown(
        [f"median of {arguments.runs}", *(f"{CLASSES[name]}, {len(answer['nodes'])} nodes"
                                          for name, (answer, _) in answers.items())],
        [[label, *(column[row] for column in columns)] for row, label in enumerate(labels)]))


def median_ms(values: list[float]) -> str:
    return milliseconds(statistics.median(values))


if __name__ == "__main__":
    main()
