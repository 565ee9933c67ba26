"""Editor latency with several capture modes: a save's fx diagnostics must arrive as fast as
with fx alone, the export and compile diagnostics after them.

A real ``python -m fx_lsp serve`` process is driven over stdio by pygls' client, on a copy of
``examples/``, once with ``modes = ["fx"]`` and once with ``["fx", "export", "compile"]``
(initialization options), over N edits and saves of one example model. Measured in the same
run (the machine is shared, absolute figures drift):

- fx alone: didSave -> the publishDiagnostics of that version;
- three modes: didSave -> the first publish of that version (fx's diagnostics), and -> the
  publish that also holds the export and compile diagnostics;
- the ratio of the medians of the first two is the figure ("as fast as today" is about 1x).

    python benchmarks/mode_latency.py [--file models/gated.py] [--edits 20]

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time

from bench_util import describe, machine_line
from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

REPOSITORY = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALL_MODES = ["fx", "export", "compile"]


class Client(LanguageClient):
    """Records when each version's diagnostics were published, and by which sources."""

    def __init__(self) -> None:
        super().__init__("mode-latency", "1")
        #: (uri, version) -> [(time, the diagnostics' sources)], in publish order.
        self.published: dict[tuple[str, int | None], list[tuple[float, set[str]]]] = {}
        self.changed = asyncio.Event()

        @self.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def publish(params: types.PublishDiagnosticsParams) -> None:
            sources = {diagnostic.source or "" for diagnostic in params.diagnostics}
            self.published.setdefault((params.uri, params.version), []).append(
                (time.perf_counter(), sources))
            self.changed.set()

        @self.feature("fxLsp/status")
        def status(params: object) -> None:
            """Seen, not measured."""

        @self.feature("fxLsp/traced")
        def traced(params: object) -> None:
            """Seen, not measured."""

    async def published_with(self, uri: str, version: int, sources: set[str],
                             timeout: float) -> tuple[float, float]:
        """(first publish of ``version``, first publish of it holding every one of
        ``sources``)."""
        deadline = time.perf_counter() + timeout
        while True:
            publishes = self.published.get((uri, version), [])
            complete = [at for at, seen in publishes if sources <= seen]
            if complete:
                return publishes[0][0], complete[0]
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), max(0.0, deadline - time.perf_counter()))


def _sources(modes: list[str]) -> set[str]:
    """The diagnostic sources of ``modes`` (``fx-lsp``, ``fx-lsp (export)``, ...)."""
    return {"fx-lsp" if mode == "fx" else f"fx-lsp ({mode})" for mode in modes}


async def measure(root: str, target: str, modes: list[str], edits: int
                  ) -> tuple[list[float], list[float]]:
    """Save latencies to the first publish and to the publish of every mode."""
    client = Client()
    await client.start_io(sys.executable, "-m", "fx_lsp", "serve", "--stdio")
    await client.initialize_async(types.InitializeParams(
        capabilities=types.ClientCapabilities(), root_uri=from_fs_path(root),
        process_id=os.getpid(), initialization_options={"modes": modes}))
    client.initialized(types.InitializedParams())
    with open(target, encoding="utf-8") as handle:
        original = handle.read()
    uri = from_fs_path(target)
    expected = _sources(modes)
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1,
                                             text=original)))
    await client.published_with(uri, 1, expected, 300)  # worker start, torch import, warm-up

    first_latencies, complete_latencies = [], []
    for edit in range(edits):
        version = edit + 2
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(
                text=f"# edit {edit}\n{original}\n_EDIT_NUMBER = {edit}\n")]))
        saved = time.perf_counter()
        client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        first, complete = await client.published_with(uri, version, expected, 120)
        first_latencies.append(first - saved)
        complete_latencies.append(complete - saved)

    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return first_latencies, complete_latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--file", default="models/gated.py", help="relative to examples/")
    parser.add_argument("--edits", type=int, default=20)
    arguments = parser.parse_args()

    print(machine_line())
    with tempfile.TemporaryDirectory() as scratch:
        runs = []
        # A copy each: the second server would otherwise answer fx from the first's cache
        # (the same texts under the same fx configuration).
        for name, modes in (("fx", ["fx"]), ("all", ALL_MODES)):
            root = os.path.join(scratch, name, "examples")
            shutil.copytree(os.path.join(REPOSITORY, "examples"), root)
            target = os.path.join(root, arguments.file)
            runs.append(asyncio.run(measure(root, target, modes, arguments.edits)))
        (fx_alone, _), (fx_first, every_mode) = runs
    print(f"modes fx:                  didSave -> fx diagnostics     {describe(fx_alone)}")
    print(f"modes fx, export, compile: didSave -> fx diagnostics     {describe(fx_first)}")
    print(f"modes fx, export, compile: didSave -> every mode's       {describe(every_mode)}")
    ratio = statistics.median(fx_first) / statistics.median(fx_alone)
    print(f"ratio of medians (fx diagnostics with three modes / fx alone): {ratio:.2f}x")


if __name__ == "__main__":
    main()
