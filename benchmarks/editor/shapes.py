"""Shape propagation: what it adds to tracing, and how soon inlay hints follow a save.

1. ``Engine.check`` of ``models/llama.py`` (Llama-2-7B's dimensions, built on meta) and
   ``models/resnet50.py``, through the real engine, ``--runs`` times each: the trace time
   (``ModuleResult.trace_seconds``) and the time to choose example inputs and propagate shapes
   on meta tensors (``shape_seconds``), both measured in the worker in the same job. Target:
   shapes add under 10 % to the trace time.
2. A real ``python -m fx_lsp serve`` over stdio on a copy of ``examples/``: after each of
   ``--edits`` saves of ``models/mlp.py``, the time until the saved version's diagnostics are
   published, and then the time an inlay-hint request takes; their sum is when the new shapes
   can show.

    python3 -m benchmarks run editor shapes -- [--runs 3] [--edits 20]

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

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

from benchmarks.paths import EXAMPLES, MODELS
from benchmarks.provenance import machine_line
from benchmarks.tables import durations, emit, markdown, met
from benchmarks.timing import describe, milliseconds
from fxcore.checking.pipeline import Pipeline
from fxcore.host.engine import Engine
from fxcore.model.job_spec import TraceJob


def propagation(runs: int) -> None:
    engine = Engine(workers=1)
    rows = []
    pipeline = Pipeline(engine)
    try:
        # Warms the zygote.
        pipeline.result_of(TraceJob(path=os.path.join(EXAMPLES, "models", "mlp.py"),
                                    workspace_root=EXAMPLES))
        for name, class_name in (("llama.py", "Llama"), ("resnet50.py", "ResNet50")):
            traces, shapes, walls = [], [], []
            module = None
            for _ in range(runs):
                started = time.perf_counter()
                result = pipeline.result_of(TraceJob(path=os.path.join(MODELS, name),
                                                     workspace_root=MODELS,
                                                     only_classes=[class_name]))
                walls.append(time.perf_counter() - started)
                (module,) = [m for m in result.modules if m.class_name == class_name]
                traces.append(module.trace_seconds)
                shapes.append(module.shape_seconds)
            assert module is not None
            trace, shape = statistics.median(traces), statistics.median(shapes)
            added = shape / trace
            inputs = module.inputs.tensors if module.inputs else None
            rows.append([f"{class_name}, {module.node_count} nodes, `{inputs}` -> "
                         f"`{module.output_shape}`", milliseconds(trace), milliseconds(shape),
                         f"**+{100 * added:.1f} %**", met("< 10 %", added < 0.1)])
            print(f"{class_name:9} {module.status}, {module.node_count} nodes, inputs "
                  f"{module.inputs.tensors if module.inputs else None} -> "
                  f"{module.output_shape}; {module.shapes_note or ''}")
            print(f"          trace {trace * 1e3:.0f} ms (median of {runs}), shapes "
                  f"{shape * 1e3:.1f} ms: +{100 * shape / trace:.1f} % of the trace time "
                  f"(target < 10 %); job wall {statistics.median(walls) * 1e3:.0f} ms")
    finally:
        engine.close()
        pipeline.close()
    emit("shapes", markdown([f"model (median of {runs})", "trace", "shapes", "added",
                             "target"], rows))


class Client(LanguageClient):
    def __init__(self) -> None:
        super().__init__("shapes-benchmark", "1")
        self.waiters: dict[tuple[str, int | None], asyncio.Future[float]] = {}

        @self.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        def publish(params: types.PublishDiagnosticsParams) -> None:
            waiter = self.waiters.pop((params.uri, params.version), None)
            if waiter is not None and not waiter.done():
                waiter.set_result(time.perf_counter())

        for method in ("fxLsp/status", "fxLsp/traced"):
            self.feature(method)(lambda params: None)

    def expect(self, uri: str, version: int) -> asyncio.Future[float]:
        future: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self.waiters[(uri, version)] = future
        return future


async def hints_after_save(edits: int) -> None:
    root = tempfile.mkdtemp(prefix="fx-lsp-shapes-")
    shutil.copytree(EXAMPLES, root, dirs_exist_ok=True)
    target = os.path.join(root, "models", "mlp.py")
    with open(target, encoding="utf-8") as handle:
        original = handle.read()
    client = Client()
    await client.start_io(sys.executable, "-m", "fx_lsp", "serve", "--stdio")
    capabilities = types.ClientCapabilities(text_document=types.TextDocumentClientCapabilities(
        inlay_hint=types.InlayHintClientCapabilities()))
    await client.initialize_async(types.InitializeParams(
        capabilities=capabilities, root_uri=from_fs_path(root), process_id=os.getpid()))
    client.initialized(types.InitializedParams())
    uri = from_fs_path(target)
    opened = client.expect(uri, 1)
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        text_document=types.TextDocumentItem(uri=uri, language_id="python", version=1,
                                             text=original)))
    await asyncio.wait_for(opened, 120)
    whole = types.Range(start=types.Position(line=0, character=0),
                        end=types.Position(line=original.count("\n") + 3, character=0))
    published, requested, counts = [], [], []
    for edit in range(edits):
        version = edit + 2
        text = f"# edit {edit}\n{original}"
        done = client.expect(uri, version)
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
        saved = time.perf_counter()
        client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=uri)))
        published.append(await asyncio.wait_for(done, 60) - saved)
        began = time.perf_counter()
        hints = await client.text_document_inlay_hint_async(types.InlayHintParams(
            text_document=types.TextDocumentIdentifier(uri=uri), range=whole))
        requested.append(time.perf_counter() - began)
        counts.append(len(hints or []))
    print(f"save -> diagnostics of the saved version {describe(published)}")
    print(f"then inlayHint request                   {describe(requested)}; "
          f"hints per answer {min(counts)}-{max(counts)}")
    total = [a + b for a, b in zip(published, requested, strict=True)]
    print(f"save -> shapes shown                     {describe(total)}")
    emit("shapes_after_save", durations(
        [("diagnostics of the saved version", published), ("then the `inlayHint` request",
                                                            requested),
         ("shapes shown", total)], "after a save of `models/mlp.py`"))
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--edits", type=int, default=20)
    arguments = parser.parse_args()
    print(machine_line())
    propagation(arguments.runs)
    asyncio.run(hints_after_save(arguments.edits))


if __name__ == "__main__":
    main()
