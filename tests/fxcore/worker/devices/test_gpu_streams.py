"""CUDA streams and events (tests/corpus/gpu/streams.py) in the GPU view get
export and compile verdicts, the same on a CPU-only build and on a CUDA build without a GPU
(the torch matrix's venvs), and dynamo sees them as it sees real ones: their calls are nodes
of the graph (``torch.ops.streams`` ops; on torch 2.10 ``synchronize`` and ``wait_stream`` are
the stream's or event's method calls). Before, making one failed ("torch.cuda.Stream requires
CUDA support" on a CPU build, the driver on a CUDA build): no class here got a verdict.

Expected answers. No GPU run of these classes exists yet, and real torch on the CPU cannot be
the reference here, because torch's source treats an accelerator's streams differently from
the CPU's: with device-generic streams on the CPU, ``torch.Event(device="cpu").record()``
raises "cpu backend doesn't support events" in eager, export and compile alike, and dynamo
keeps a current stream only where an accelerator is available
(torch/_dynamo/variables/streams.py, ``SymbolicStreamState.__init__``: ``if
torch.accelerator.is_available():``), so ``current_stream()`` is an IndexError there. What a
GPU gives follows from the same source, which is device-generic from there on:

- export (non-strict) runs the forward as Python: stream and event calls are Python effects
  with no tensor, so each class exports as its tensor code does (traceable). The issue's H100
  run (torch 2.11) exported such classes.
- compile: ``torch.cuda.Stream()``/``Event()`` are in-graph classes made at trace time
  (torch/_dynamo/variables/user_defined.py, ``if issubclass(self.value, torch.Stream):`` and
  ``elif issubclass(self.value, torch.Event):``); ``record``, ``wait``, ``synchronize``,
  ``wait_stream`` become ``torch.ops.streams`` ops (streams.py, ``StreamVariable.call_method``
  and ``EventVariable.call_method``); ``torch.cuda.current_stream`` is the stream state's
  (variables/torch.py, ``handle_current_stream``); ``with torch.cuda.stream(s)`` is a stream
  context (``handle_device_interface_stream``). So every class compiles whole, but
  ``torch.cuda.default_stream()``: a torch function returning a stream that dynamo does not
  make (variables/builder.py, ``wrap_fx_proxy_cls``: a ``torch.Stream`` is a variable only
  from ``get_external_object_by_index`` or a ``current_stream``), GB0208 at its line, on a GPU
  as here. The issue's H100 run (torch 2.11) compiled events and side streams whole.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from fx_lsp.cli.output_formats.json_report import parse_report
from fxcore.worker.pipeline.capturing import GPU_NOTE

import cli_support

pytestmark = [pytest.mark.matrix, pytest.mark.matrix_sweep, pytest.mark.slow]

CORPUS = Path(__file__).resolve().parents[3] / "corpus" / "gpu" / "streams.py"
DEFAULT_STREAM_LINE = next(number for number, line in
                           enumerate(CORPUS.read_text().splitlines(), 1)
                           if "default_stream().synchronize()" in line)
#: The stream and event calls each class's compiled graph holds.
STREAM_CALLS = {
    "TimedForward": {"record", "synchronize"},
    "SideStream": {"wait_stream"},
    "StoredStream": {"record", "wait"},
    "SynchronizedStream": {"synchronize"},
}
#: A graph node's stream or event call: a torch.ops.streams op, or the object's method.
CALL_OF_NODE = {
    "torch.ops.streams.record_event": "record", "torch.ops.streams.wait_event": "wait",
    "torch.ops.streams.synchronize_event": "synchronize",
    "torch.ops.streams.synchronize_stream": "synchronize", "synchronize": "synchronize",
    "torch.ops.streams.wait_stream": "wait_stream", "wait_stream": "wait_stream",
}


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    workspace = tmp_path_factory.mktemp("streams")
    shutil.copy(CORPUS, workspace)
    completed = cli_support.fx_lsp("check", "--no-cache", "--mode", "export,compile",
                                   "--output-format", "json", ".", cwd=workspace)
    assert completed.returncode in (0, 1), completed.stderr
    return parse_report(completed.stdout)


def _module(report: dict[str, Any], name: str, mode: str) -> dict[str, Any]:
    return next(module for module in report["modules"]
                if module["class"] == name and module["mode"] == mode)


@pytest.mark.parametrize("name", sorted(STREAM_CALLS))
def test_streams_and_events_export_as_on_a_gpu(report: dict[str, Any], name: str) -> None:
    module = _module(report, name, "export")
    assert module["status"] == "traceable", (module["reason"], module["failures"])
    assert GPU_NOTE in module["capture_notes"]


@pytest.mark.parametrize("name", sorted(STREAM_CALLS))
def test_streams_and_events_compile_as_on_a_gpu(report: dict[str, Any], name: str) -> None:
    module = _module(report, name, "compile")
    breaks = {(d["line"], d["code"]) for d in report["diagnostics"]
              if d["mode"] == "compile" and d["classes"] == [name]}
    if name == "SynchronizedStream":
        assert breaks == {(DEFAULT_STREAM_LINE, "GB0208")}
    else:
        assert (module["status"], breaks) == ("traceable", set()), module["failures"]
    assert GPU_NOTE in module["capture_notes"]
    calls = {CALL_OF_NODE[str(node["target"])] for node in module["nodes"]
             if str(node["target"]) in CALL_OF_NODE}
    assert calls == STREAM_CALLS[name]
