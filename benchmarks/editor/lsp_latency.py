"""Language-server latency: didSave -> publishDiagnostics, and hover while a slow trace runs.

A real ``python -m fx_lsp serve`` process is driven over stdio by pygls' client, on a copy of
``examples/``. Measured in the same run (the machine is shared, absolute figures drift):

- didSave -> publishDiagnostics for the saved version, over N edits of an example model;
- hover latency while another file's trace sleeps in its forward (the engine is busy);
- a fresh ``python -c`` per check that imports torch and traces the file's classes with plain
  torch.fx, the alternative without a warm worker; the ratio of the medians is the figure.

    python3 -m benchmarks run editor lsp_latency --
        [--file models/gated.py] [--edits 50] [--hovers 200] [--fresh-runs 5]

Prints figures; asserts nothing.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

from benchmarks.paths import REPOSITORY
from benchmarks.provenance import machine_line
from benchmarks.tables import durations, emit
from benchmarks.timing import describe, percentile

SLOW_MODEL = """import time

from torch import nn


class Slow(nn.Module):
    def forward(self, x):
        time.sleep({seconds})
        return x
"""


class Client(LanguageClient):
    def __init__(self) -> None:
        super().__init__("lsp-latency", "1")
        self.published: dict[tuple[str, int | None], float] = {}
        self.waiters: dict[tuple[str, int | None], asyncio.Future[float]] = {}

        @self.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def publish(params: types.PublishDiagnosticsParams) -> None:
            key = (params.uri, params.version)
            now = time.perf_counter()
            self.published[key] = now
            waiter = self.waiters.pop(key, None)
            if waiter is not None and not waiter.done():
                waiter.set_result(now)

        @self.feature("fxLsp/status")
        def status(params: object) -> None:
            """Seen, not measured (the server sends it around every trace)."""

        @self.feature("fxLsp/traced")
        def traced(params: object) -> None:
            """Seen, not measured."""

    def expect(self, uri: str, version: int) -> asyncio.Future[float]:
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self.waiters[(uri, version)] = future
        return future


def _item(path: str, text: str) -> types.TextDocumentItem:
    return types.TextDocumentItem(
        uri=from_fs_path(path), language_id="python", version=1, text=text
    )


async def measure(root: str, target: str, edits: int, hovers: int,
                  slow_seconds: float) -> tuple[list[float], list[float]]:
    """didSave -> publishDiagnostics latencies, and hover latencies during a slow trace."""
    client = Client()
    await client.start_io(sys.executable, "-m", "fx_lsp", "serve", "--stdio")
    await client.initialize_async(
        types.InitializeParams(
            capabilities=types.ClientCapabilities(),
            root_uri=from_fs_path(root),
            process_id=os.getpid(),
        )
    )
    client.initialized(types.InitializedParams())
    with open(target, encoding="utf-8") as handle:
        original = handle.read()
    uri = from_fs_path(target)
    first = client.expect(uri, 1)
    started = time.perf_counter()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(text_document=_item(target, original))
    )
    await asyncio.wait_for(first, 120)
    print(
        f"first diagnostics after open (worker start + torch import): "
        f"{(time.perf_counter() - started) * 1e3:.0f} ms"
    )

    latencies = []
    version = 1
    for edit in range(edits):
        version += 1
        text = f"# edit {edit}\n{original}\n_EDIT_NUMBER = {edit}\n"
        published = client.expect(uri, version)
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
                content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )
        saved = time.perf_counter()
        client.text_document_did_save(
            types.DidSaveTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
        )
        latencies.append(await asyncio.wait_for(published, 60) - saved)
    print(f"didSave -> publishDiagnostics  {describe(latencies)}")

    # Hover while the engine traces a model that sleeps in its forward.
    slow = os.path.join(os.path.dirname(target), "slow_model.py")
    slow_text = SLOW_MODEL.format(seconds=slow_seconds)
    with open(slow, "w", encoding="utf-8") as handle:
        handle.write(slow_text)
    slow_done = client.expect(from_fs_path(slow), 1)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(text_document=_item(slow, slow_text))
    )
    await asyncio.sleep(0.3)  # the slow child is running now
    hover_times = []
    position = types.Position(line=original.count("\n") // 2, character=8)
    for _ in range(hovers):
        began = time.perf_counter()
        await client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri), position=position
            )
        )
        hover_times.append(time.perf_counter() - began)
        if slow_done.done():
            break
    busy = not slow_done.done()
    print(
        f"hover during a slow trace        {describe(hover_times)}   "
        f"p99 {percentile(hover_times, 0.99) * 1e3:.1f} ms   "
        f"(slow trace {'still running' if busy else 'finished'} at the end)"
    )
    await asyncio.wait_for(slow_done, slow_seconds + 60)

    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    return latencies, hover_times


FRESH = """
import importlib, inspect, sys
import torch
from torch import fx
sys.path.insert(0, sys.argv[1])
module = importlib.import_module(sys.argv[2])
for value in vars(module).values():
    own = inspect.isclass(value) and value.__module__ == module.__name__
    if own and issubclass(value, torch.nn.Module):
        try:
            fx.symbolic_trace(value())
        except Exception:
            pass
"""


def fresh_checks(target: str, root: str, runs: int) -> list[float]:
    """A new process per check that imports torch and traces the file's classes with plain
    torch.fx: the cost a server avoids by keeping a warm worker."""
    module = os.path.relpath(target, root)[: -len(".py")].replace(os.sep, ".")
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", FRESH, root, module],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=False,
        )
        times.append(time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--file", default="models/gated.py", help="relative to examples/")
    parser.add_argument("--edits", type=int, default=50)
    parser.add_argument("--hovers", type=int, default=200)
    parser.add_argument("--fresh-runs", type=int, default=5)
    parser.add_argument("--slow-seconds", type=float, default=8.0)
    arguments = parser.parse_args()

    print(machine_line())
    with tempfile.TemporaryDirectory() as scratch:
        root = os.path.join(scratch, "examples")
        shutil.copytree(os.path.join(REPOSITORY, "examples"), root)
        target = os.path.join(root, arguments.file)
        latencies, hover_times = asyncio.run(
            measure(root, target, arguments.edits, arguments.hovers, arguments.slow_seconds)
        )
        fresh = fresh_checks(target, root, arguments.fresh_runs)
    print(f"fresh process per check         {describe(fresh)}")
    ratio = statistics.median(fresh) / statistics.median(latencies)
    print(f"ratio of medians (fresh process / server didSave): {ratio:.1f}x")
    emit("lsp_latency", durations([
        (f"didSave -> diagnostics (`{arguments.file}`)", latencies),
        ("hover while a slow trace runs", hover_times),
        ("fresh `python -c` per check", fresh)],
        figures=[("ratio of medians, fresh process / didSave", f"**{ratio:.1f}x**")]))


if __name__ == "__main__":
    main()
