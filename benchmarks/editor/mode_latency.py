"""Editor latency with several capture modes: a save's fx diagnostics must arrive as fast as
with fx alone, every mode's single-call diagnostics after them (within 500 ms at the median for
a small module), compile mode's loop findings last.

Real ``python -m fx_lsp serve`` processes are driven over stdio by pygls' client, each on its
own copy of ``examples/`` (a shared copy would answer one server from another's cache), one
with ``modes = ["fx"]`` and one with ``["fx", "export", "compile"]`` (initialization
options), over N edits and saves of one example model. The servers take turns, one save each
(the machine is shared: drifting load then falls on every server alike). Measured:

- fx alone: didSave -> the publishDiagnostics of that version;
- three modes, the stages of a trace (``fxcore.reporting.mode_phases``): didSave -> the first
  publish of that version (fx's diagnostics); -> the publish of every mode's single call
  (export, and compile without its loop of calls: the ``fxLsp/traced`` after which only
  ``compile-loop`` is ``pending``); -> the loop's findings, every stage published (the
  ``fxLsp/traced`` with nothing ``pending``);
- the ratio of the medians of fx's diagnostics with three modes and alone ("as fast as fx
  alone" is about 1x);
- the CPU time the workers (the zygote's children) and the server took per save, which other
  processes on the machine do not change as much as they change latencies.

The loop of calls (``recompile_loop``) runs only on a class whose compile reads no tensor
data: ``benchmarks/editor/loop_block.py``, not ``gated.py``.

``--baseline REVISION`` adds a third server with the three modes, run from that commit of this
repository (its tree extracted with ``git archive``): the baseline, measured in the same
turns. A tree whose ``fxLsp/traced`` names no ``pending`` stages publishes every mode in one
stage after fx: its single-call and loop figures are both that publish's (the first holding
every mode's diagnostics).

    python3 -m benchmarks run editor mode_latency --
        [--file models/gated.py | --file benchmarks/editor/loop_block.py] [--edits 20]
        [--edit around | --edit class] [--baseline REV] [--profile]

``--file``: relative to ``examples/``, or a file of this repository (``benchmarks/...``),
copied into each server's ``examples/``. ``--edit`` (``class_edits``): ``around`` (the
default) leaves the class as it is, so per-class reuse answers it from its kept verdicts;
``class`` changes the class body at each save, so that it is traced again, as after an
edit of the class. ``--profile``: after the measurement, where an edited class's seconds go,
phase by phase (``save_profile``, in a process of its own).

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
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

from benchmarks.editor.class_edits import EDITS, edited
from benchmarks.paths import REPOSITORY
from benchmarks.procfs import children_of, stat_cpu_seconds
from benchmarks.provenance import machine_line
from benchmarks.tables import durations, emit
from benchmarks.timing import describe

ALL_MODES = ["fx", "export", "compile"]
#: What ``fxLsp/traced`` calls compile's loop of calls while it is pending.
LOOP_STAGE = "compile-loop"


class Client(LanguageClient):
    """Records when each version's diagnostics were published, and by which sources."""

    def __init__(self) -> None:
        super().__init__("mode-latency", "1")
        #: (uri, version) -> [(time, the diagnostics' sources)], in publish order.
        self.published: dict[tuple[str, int | None], list[tuple[float, set[str]]]] = {}
        #: (uri, version) -> [(time, the stages still pending, None where not said)].
        self.traced: dict[tuple[str, int | None], list[tuple[float, set[str] | None]]] = {}
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
        def traced(params: Any) -> None:
            pending = getattr(params, "pending", None)
            self.traced.setdefault((params.uri, params.version), []).append(
                (time.perf_counter(), None if pending is None else set(pending)))
            self.changed.set()

        @self.feature(types.WINDOW_LOG_MESSAGE)
        def log_message(params: object) -> None:
            """Seen, not measured."""

    def _stages(self, uri: str, version: int, sources: set[str]
                ) -> tuple[float, float, float] | None:
        """(fx's publish, the single calls', the loop's) of ``version``, once all came."""
        publishes = self.published.get((uri, version), [])
        traced = self.traced.get((uri, version), [])
        if not publishes or not traced:
            return None
        if traced[-1][1] is None:  # a tree without stages: every mode in one publish
            complete = [at for at, seen in publishes if sources <= seen]
            return (publishes[0][0], complete[0], complete[0]) if complete else None
        single = [at for at, pending in traced if pending is not None
                  and pending <= {LOOP_STAGE}]
        done = [at for at, pending in traced if pending == set()]
        return (publishes[0][0], single[0], done[0]) if done else None

    async def published_with(self, uri: str, version: int, sources: set[str],
                             timeout: float) -> tuple[float, float, float]:
        """The first publish of ``version``, the ``fxLsp/traced`` of its single calls, and the
        one of every stage (where ``sources`` were published)."""
        deadline = time.perf_counter() + timeout
        while True:
            stages = self._stages(uri, version, sources)
            if stages is not None:
                return stages
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), max(0.0, deadline - time.perf_counter()))


def _sources(modes: list[str]) -> set[str]:
    """The diagnostic sources of ``modes`` (``fx-lsp``, ``fx-lsp (export)``, ...)."""
    return {"fx-lsp" if mode == "fx" else f"fx-lsp ({mode})" for mode in modes}


class Session:
    """One server, from the source tree ``checkout``, on its own copy of ``examples/``, with
    ``environment`` added to this process's."""

    def __init__(self, checkout: str, modes: list[str], scratch: str, name: str,
                 file: str, edit: str = "around",
                 environment: dict[str, str] | None = None) -> None:
        self.checkout = checkout
        self.edit = edit
        self.modes = modes
        self.environment = {**os.environ, **(environment or {})}
        root = os.path.join(scratch, name, "examples")
        shutil.copytree(os.path.join(REPOSITORY, "examples"), root)
        self.root = root
        self.target = os.path.join(root, file)
        if not os.path.exists(self.target):  # a file of the repository's (benchmarks/...)
            self.target = os.path.join(root, os.path.basename(file))
            shutil.copy(os.path.join(REPOSITORY, file), self.target)
        with open(self.target, encoding="utf-8") as handle:
            self.original = handle.read()
        self.uri = from_fs_path(self.target)
        self.client = Client()
        #: Seconds from each didSave to the first publish, to every mode's single call's,
        #: and to every stage's (compile's loop findings).
        self.first: list[float] = []
        self.single: list[float] = []
        self.complete: list[float] = []
        #: CPU seconds of (the workers, the server) over the saves.
        self.cpu: tuple[float, float] = (0.0, 0.0)
        self._cpu_before: tuple[float, float] = (0.0, 0.0)

    def cpu_seconds(self) -> tuple[float, float]:
        """CPU seconds so far of the job children the zygote has reaped, and of the server."""
        server = self.client._server
        assert server is not None
        zygotes = [pid for pid in children_of(server.pid)
                   if "fxcore.host.zygote" in _command_line(pid)]
        workers = sum(stat_cpu_seconds(pid, children=True) or 0.0 for pid in zygotes)
        return workers, stat_cpu_seconds(server.pid) or 0.0

    async def start(self) -> None:
        # Started in its checkout: `python -m` imports fx_lsp (and the zygote fxcore) from
        # there, not from where fx-lsp is installed.
        await self.client.start_io(sys.executable, "-m", "fx_lsp", "serve", "--stdio",
                                   cwd=self.checkout, env=self.environment)
        await self.client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=from_fs_path(self.root),
            process_id=os.getpid(), initialization_options={"modes": self.modes}))
        self.client.initialized(types.InitializedParams())
        self.client.text_document_did_open(types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(uri=self.uri, language_id="python",
                                                 version=1, text=self.original)))
        # Worker start, torch import, warm-up.
        await self.client.published_with(self.uri, 1, _sources(self.modes), 300)
        await asyncio.sleep(1.0)  # the zygote reaps the opening's children
        self._cpu_before = self.cpu_seconds()

    async def save(self, edit: int) -> None:
        """Edit and save the file; wait for every mode's diagnostics of that version."""
        version = edit + 2
        self.client.text_document_did_change(types.DidChangeTextDocumentParams(
            text_document=types.VersionedTextDocumentIdentifier(uri=self.uri, version=version),
            content_changes=[types.TextDocumentContentChangeWholeDocument(
                text=edited(self.original, edit, self.edit))]))
        saved = time.perf_counter()
        self.client.text_document_did_save(types.DidSaveTextDocumentParams(
            text_document=types.TextDocumentIdentifier(uri=self.uri)))
        first, single, complete = await self.client.published_with(
            self.uri, version, _sources(self.modes), 120)
        self.first.append(first - saved)
        self.single.append(single - saved)
        self.complete.append(complete - saved)

    async def stop(self) -> None:
        await asyncio.sleep(1.0)  # the zygote reaps the last save's children
        after = self.cpu_seconds()
        self.cpu = (after[0] - self._cpu_before[0], after[1] - self._cpu_before[1])
        await self.client.shutdown_async(None)
        self.client.exit(None)
        await self.client.stop()


async def measure(sessions: list[Session], edits: int) -> None:
    """Start every server, then take turns: one save each, ``edits`` times."""
    for session in sessions:
        await session.start()
    for edit in range(edits):
        for session in sessions:
            await session.save(edit)
    for session in sessions:
        await session.stop()


def _command_line(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _cpu_per_save(session: Session) -> str:
    workers, server = (seconds / len(session.complete) * 1e3 for seconds in session.cpu)
    return f"workers {workers:.1f} ms, server {server:.1f} ms"


def _repository_file(file: str) -> str:
    """``--file`` in this repository: under ``examples/``, else from its root."""
    example = os.path.join(REPOSITORY, "examples", file)
    return example if os.path.exists(example) else os.path.join(REPOSITORY, file)


def _git(*arguments: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["git", *arguments], cwd=REPOSITORY, capture_output=True,
                          check=True)


def _commit(revision: str) -> str:
    return _git("log", "-1", "--format=%h %s", revision).stdout.decode().strip()[:90]


def _extracted(revision: str, folder: str) -> str:
    """The tree of ``revision`` of this repository, written into ``folder``."""
    os.makedirs(folder)
    subprocess.run(["tar", "-x", "-C", folder], input=_git("archive", revision).stdout,
                   check=True)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--file", default="models/gated.py",
                        help="relative to examples/, or a file of this repository")
    parser.add_argument("--edits", type=int, default=20)
    parser.add_argument("--edit", choices=EDITS, default="around",
                        help="around: the class unchanged (reuse answers); class: its body "
                        "changed at each save")
    parser.add_argument("--baseline", metavar="REVISION",
                        help="a commit of this repository whose server is the baseline")
    parser.add_argument("--profile", action="store_true",
                        help="then print where an edited class's seconds go, phase by phase")
    arguments = parser.parse_args()

    print(machine_line())
    dirty = " + uncommitted changes" if _git("status", "--porcelain").stdout.strip() else ""
    print(f"this tree: {_commit('HEAD')}{dirty}")
    if arguments.baseline:
        print(f"baseline:  {_commit(arguments.baseline)}")
    with tempfile.TemporaryDirectory() as scratch:
        how = arguments.edit
        sessions = [Session(REPOSITORY, ["fx"], scratch, "fx", arguments.file, how),
                    Session(REPOSITORY, ALL_MODES, scratch, "all", arguments.file, how)]
        if arguments.baseline:
            checkout = _extracted(arguments.baseline, os.path.join(scratch, "baseline-tree"))
            sessions.append(Session(checkout, ALL_MODES, scratch, "baseline", arguments.file,
                                    how))
        asyncio.run(measure(sessions, arguments.edits))
    fx_alone, every_mode = sessions[:2]
    print(machine_line())
    at = f"at {arguments.baseline}"
    rows = [("fx alone: didSave -> fx diagnostics", fx_alone.first),
            ("three modes: didSave -> fx diagnostics", every_mode.first),
            ("three modes: didSave -> single calls (export, compile without its loop)",
             every_mode.single),
            ("three modes: didSave -> loop findings (every stage)", every_mode.complete)]
    if arguments.baseline:
        rows += [(f"three modes {at}: didSave -> fx diagnostics", sessions[2].first),
                 (f"three modes {at}: didSave -> every mode's diagnostics (one stage, "
                  "the loop's included)", sessions[2].complete)]
    for name, values in rows:
        print(f"{name + ':':90} {describe(values)}")
    names = ["fx alone", "three modes", f"three modes {at}"]
    for name, session in zip(names, sessions, strict=False):
        print(f"{name + ':':27}CPU per save: {_cpu_per_save(session)}")
    ratio = statistics.median(every_mode.first) / statistics.median(fx_alone.first)
    print(f"ratio of medians (fx diagnostics with three modes / fx alone): {ratio:.2f}x")
    figures = [("ratio of medians, fx diagnostics with three modes / fx alone", f"{ratio:.2f}x")]
    if arguments.baseline:
        baseline = sessions[2]
        earlier = statistics.median(baseline.complete) / statistics.median(every_mode.single)
        later = statistics.median(every_mode.complete) / statistics.median(baseline.complete)
        cpu = every_mode.cpu[0] / baseline.cpu[0] if baseline.cpu[0] else float("nan")
        print(f"single calls come {earlier:.2f}x earlier than every mode {at}; the loop's "
              f"findings {later:.2f}x as late; worker CPU {cpu:.2f}x")
        figures += [(f"ratio of medians, every mode's diagnostics {at} / single calls",
                     f"{earlier:.2f}x"),
                    (f"ratio of medians, loop findings / every mode's diagnostics {at}",
                     f"{later:.2f}x"),
                    (f"ratio of worker CPU, three modes / three modes {at}", f"{cpu:.2f}x")]
    # A class edited at each save has a block of its own beside the kept class's.
    emit("mode_latency" if how == "around" else "mode_latency_class_edits", durations(
        rows, f"`{arguments.file}`, {arguments.edits} saves ({how} edits)", figures=[
            *figures, *((f"CPU per save, {name}", _cpu_per_save(session))
                        for name, session in zip(names, sessions, strict=False))]))
    if arguments.profile:
        print(f"where an edited class's seconds go ({machine_line()}):")
        subprocess.run([sys.executable, "-m", "benchmarks.editor.save_profile",
                        _repository_file(arguments.file)], cwd=REPOSITORY, check=False)


if __name__ == "__main__":
    main()
