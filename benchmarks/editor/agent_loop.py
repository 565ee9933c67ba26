"""An agent's loop: edit a file, then ask ``fx-lsp mcp``'s ``check`` tool about it.

A real ``python -m fx_lsp mcp`` over stdio, driven by the official ``mcp`` SDK's client, on a
copy of ``examples/``. Measured in the same run (the machine is shared, absolute figures drift):

- cold: the first ``check`` of the file (the engine's zygote starts, torch is imported);
- warm: after each of N edits written to disk, the ``check`` of that file (cache and zygote
  ready, the edited file traced anew);
- ``fx-lsp check FILE --output-format json`` as a new process after each edit, what an agent
  shelling out pays;
- the editor's figure to compare the warm check with: ``fx-lsp serve``'s didSave ->
  publishDiagnostics (``lsp_latency``'s client), taken in turns with the warm checks so that
  both meet the same load.

    python3 -m benchmarks run editor agent_loop -- [--file models/gated.py] [--edits 20]
        [--process-runs 5]

Needs the mcp extra (pip install 'fx-lsp[mcp]'). Prints figures; asserts nothing.
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
from pygls.uris import from_fs_path

from benchmarks.editor.lsp_latency import Client, _item
from benchmarks.paths import REPOSITORY
from benchmarks.provenance import machine_line
from benchmarks.tables import durations, emit
from benchmarks.timing import describe


def _edit(path: str, original: str, number: int) -> None:
    """Write an edit of the file: a new text, traced anew, never from the cache."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(f"{original}\n_EDIT_NUMBER = {number}\n")


class Editor:
    """``fx-lsp serve`` as an editor drives it: the file open, then each edit saved."""

    def __init__(self, root: str, target: str) -> None:
        self.root, self.target, self.uri = root, target, from_fs_path(target)
        self.client = Client()
        self.version = 1

    async def open(self, text: str) -> None:
        await self.client.start_io(sys.executable, "-m", "fx_lsp", "serve", "--stdio")
        await self.client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=from_fs_path(self.root),
            process_id=os.getpid()))
        self.client.initialized(types.InitializedParams())
        first = self.client.expect(self.uri, 1)
        self.client.text_document_did_open(
            types.DidOpenTextDocumentParams(text_document=_item(self.target, text)))
        await asyncio.wait_for(first, 120)

    async def save(self, text: str) -> float:
        """didSave -> publishDiagnostics of the saved version, in seconds."""
        self.version += 1
        published = self.client.expect(self.uri, self.version)
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=self.uri,
                                                                version=self.version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
        saved = time.perf_counter()
        self.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=self.uri)))
        return await asyncio.wait_for(published, 60) - saved

    async def close(self) -> None:
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


async def agent_and_editor(root: str, file: str, edits: int
                           ) -> tuple[float, list[float], list[float]]:
    """The first MCP check's seconds, then per edit, taken in turns so that both see the same
    load: the warm MCP check after an edit written to disk, and the editor's didSave ->
    diagnostics after another edit."""
    from mcp import ClientSession, StdioServerParameters, stdio_client

    target = os.path.join(root, file)
    with open(target, encoding="utf-8") as handle:
        original = handle.read()
    params = StdioServerParameters(command=sys.executable, args=["-m", "fx_lsp", "mcp"],
                                   cwd=root, env=dict(os.environ))
    editor = Editor(root, target)
    with open(os.devnull, "w") as errors:
        async with stdio_client(params, errlog=errors) as (read, write), \
                ClientSession(read, write) as session:
            await session.initialize()
            # A text no one traced yet: the cold check is not answered from the cache.
            _edit(target, original, edits)
            started = time.perf_counter()
            first = await session.call_tool("check", {"paths": [file]})
            cold = time.perf_counter() - started
            assert not first.is_error, first.content
            await editor.open(original)
            warm, saves = [], []
            for number in range(edits):
                _edit(target, original, number)
                started = time.perf_counter()
                answer = await session.call_tool("check", {"paths": [file]})
                warm.append(time.perf_counter() - started)
                assert not answer.is_error, answer.content
                # Another text than the check's: the editor's trace is not a cache hit.
                saves.append(await editor.save(f"{original}\n_EDIT_NUMBER = {-1 - number}\n"))
    await editor.close()
    return cold, warm, saves


def as_processes(root: str, file: str, runs: int) -> list[float]:
    """``fx-lsp check FILE --output-format json`` as a new process after each edit."""
    target = os.path.join(root, file)
    with open(target, encoding="utf-8") as handle:
        original = handle.read()
    times = []
    for number in range(runs):
        _edit(target, original, 1000 + number)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "fx_lsp", "check", file, "--output-format",
                        "json"], cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False)
        times.append(time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--file", default="models/gated.py", help="relative to examples/")
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--process-runs", type=int, default=5)
    arguments = parser.parse_args()

    print(machine_line())
    with tempfile.TemporaryDirectory() as scratch:
        root = os.path.join(scratch, "examples")
        shutil.copytree(os.path.join(REPOSITORY, "examples"), root)
        cold, warm, saves = asyncio.run(agent_and_editor(root, arguments.file, arguments.edits))
        processes = as_processes(root, arguments.file, arguments.process_runs)
    print(f"MCP check, cold                 {cold * 1e3:.0f} ms")
    print(f"MCP check after an edit, warm   {describe(warm)}")
    print(f"fx-lsp check as a process       {describe(processes)}")
    print(f"fx-lsp serve didSave -> diags   {describe(saves)}")
    ratio = statistics.median(processes) / statistics.median(warm)
    editor = statistics.median(warm) / statistics.median(saves)
    print(f"ratio of medians (process / warm MCP check): {ratio:.1f}x; "
          f"(warm MCP check / didSave): {editor:.2f}x")
    emit("agent_loop", durations([
        ("MCP `check`, cold (first call: zygote, torch import)", [cold]),
        (f"MCP `check` after an edit, warm (`{arguments.file}`)", warm),
        ("`fx-lsp check FILE --output-format json` as a process", processes),
        ("`fx-lsp serve` didSave -> diagnostics, the editor's figure", saves)],
        figures=[("ratio of medians, process / warm MCP check", f"**{ratio:.1f}x**"),
                 ("ratio of medians, warm MCP check / didSave", f"**{editor:.2f}x**")]))


if __name__ == "__main__":
    main()
