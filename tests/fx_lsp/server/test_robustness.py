"""Floods and garbage: the server keeps up, keeps its memory, and never crashes."""

from __future__ import annotations

import asyncio
import pathlib
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types

from lsp_support import FxClient, session, wait_for


def _rss_kb(pid: int) -> int:
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.slow  # over 15 s
async def test_flood_of_changes_leaves_no_backlog(workspace: pathlib.Path) -> None:
    net = workspace / "pkg" / "net.py"
    text = net.read_text()
    async with session(workspace, options={"run": "onType", "debounceMs": 500}) as client:
        uri = client.open(net)
        await client.diagnostics_for(uri, version=1)
        await wait_for(lambda: client.traced, 10, "the first fxLsp/traced")
        pid = client._server.pid
        mark, traced_mark = len(client.published), len(client.traced)

        async def flood(count: int) -> int:
            version = 0
            for index in range(count):
                version = client.replace_text(uri, text + f"\n# edit {index}\n")
                if index % 10 == 0:
                    await asyncio.sleep(0.09)  # 1,000 in about 10 s
            return version

        await flood(200)  # warm up allocator and caches before measuring
        rss_before = _rss_kb(pid)
        started = time.monotonic()
        hover_times = []
        flood_task = asyncio.ensure_future(flood(1000))
        while not flood_task.done():
            began = time.monotonic()
            await client.text_document_hover_async(
                types.HoverParams(
                    text_document=types.TextDocumentIdentifier(uri=uri),
                    position=types.Position(line=12, character=8),
                )
            )
            hover_times.append(time.monotonic() - began)
            await asyncio.sleep(0.2)
        final = flood_task.result()
        flood_seconds = time.monotonic() - started
        diagnostics = await client.diagnostics_for(uri, version=final, after=mark, timeout=20)
        caught_up = time.monotonic() - started - flood_seconds
        rss_after = _rss_kb(pid)

        assert flood_seconds < 15
        assert diagnostics
        assert caught_up < 10, f"{caught_up:.1f} s to publish the newest version"
        # Only the newest version was traced: no trace ran for the versions typed over.
        # Its fxLsp/traced follows its diagnostics, and may be read a moment after them.
        await wait_for(lambda: client.traced[traced_mark:], 10, "the newest fxLsp/traced")
        assert [t["version"] for t in client.traced[traced_mark:]] == [final]
        print(
            f"flood: {flood_seconds:.1f} s, newest published {caught_up:.2f} s later, "
            f"hover max {max(hover_times) * 1000:.0f} ms, RSS {rss_before} -> {rss_after} kB"
        )
        assert max(hover_times) < 1.0, max(hover_times)
        assert rss_after - rss_before < 30_000, (rss_before, rss_after)


# -- hypothesis: mangled sources through every handler -----------------------------------------

BASE = (pathlib.Path(__file__).parent / "workspaces" / "basic" / "pkg" / "net.py").read_text()


@st.composite
def mangled_sources(draw: Any) -> str:
    kind = draw(st.sampled_from(["cut", "splice", "random", "lines"]))
    if kind == "random":
        return draw(st.text(max_size=300))
    if kind == "lines":
        lines = BASE.splitlines(keepends=True)
        return "".join(draw(st.lists(st.sampled_from(lines), max_size=40)))
    start = draw(st.integers(0, len(BASE)))
    end = draw(st.integers(start, min(len(BASE), start + 200)))
    inserted = draw(st.text(max_size=20)) if kind == "splice" else ""
    return BASE[:start] + inserted + BASE[end:]


class LoopThread:
    """One event loop in a thread holding one server session for all hypothesis examples."""

    def __init__(self, root: pathlib.Path) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.root = root
        self._context = session(root, options={"run": "onType", "debounceMs": 50})
        self.client: FxClient = self.run(self._context.__aenter__())
        self.uri = self.client.open(root / "pkg" / "net.py")

    def run(self, coroutine: Any, timeout: float = 60) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout)

    def close(self) -> None:
        self.run(self._context.__aexit__(None, None, None))
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@pytest.fixture(scope="module")
def fuzz_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoopThread]:
    import shutil

    root = tmp_path_factory.mktemp("fuzz") / "basic"
    shutil.copytree(pathlib.Path(__file__).parent / "workspaces" / "basic", root)
    holder = LoopThread(root)
    yield holder
    holder.close()


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    source=mangled_sources(),
    line=st.integers(-2, 80),
    character=st.integers(-2, 120),
)
def test_mangled_sources_never_break_the_server(
    fuzz_session: LoopThread, source: str, line: int, character: int
) -> None:
    client, uri = fuzz_session.client, fuzz_session.uri
    # Out-of-range positions are the client's bug, but must not take the server down either.
    position = types.Position(line=max(line, 0), character=max(character, 0))
    document = types.TextDocumentIdentifier(uri=uri)

    async def exercise() -> None:
        client.replace_text(uri, source)
        hover = await client.text_document_hover_async(
            types.HoverParams(text_document=document, position=position)
        )
        assert hover is None or isinstance(hover, types.Hover)
        actions = await client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=document,
                range=types.Range(start=types.Position(line=0, character=0), end=position),
                context=types.CodeActionContext(diagnostics=[]),
            )
        )
        assert actions is None or isinstance(actions, (list, tuple))
        lenses = await client.text_document_code_lens_async(
            types.CodeLensParams(text_document=document)
        )
        assert lenses is None or isinstance(lenses, (list, tuple))
        await asyncio.sleep(0.1)  # let some traces start and be outdated
        assert client._server.returncode is None

    fuzz_session.run(exercise())


def test_server_still_traces_after_the_fuzzing(fuzz_session: LoopThread) -> None:
    client, uri = fuzz_session.client, fuzz_session.uri

    async def check() -> None:
        mark = len(client.published)
        version = client.replace_text(uri, BASE)
        diagnostics = await client.diagnostics_for(uri, version=version, after=mark)
        assert any(d.code == "FX002" for d in diagnostics)
        assert not [m for m in client.messages if m.type == types.MessageType.Error]
        await wait_for(lambda: client.statuses[-1]["state"] == "idle", 20, "idle")

    fuzz_session.run(check())
