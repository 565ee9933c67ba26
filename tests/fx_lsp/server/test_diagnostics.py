"""Diagnostics end to end: a real server process, real torch, real files."""

from __future__ import annotations

import asyncio
import pathlib

import pytest
from lsprotocol import types
from pygls.uris import from_fs_path

from lsp_support import FxClient, session, wait_for


def _by_code(diagnostics: list[types.Diagnostic], code: str) -> list[types.Diagnostic]:
    return [d for d in diagnostics if d.code == code]


def _line_of(path: pathlib.Path, needle: str) -> tuple[int, str]:
    for index, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        if needle in line:
            return index, line
    raise AssertionError(needle)


def _story(client: FxClient) -> str:
    """Every publish (file, version, codes) and log line the client got, in order."""
    publishes = [(p.uri.rsplit("/", 2)[-2:], p.version, [d.code for d in p.diagnostics])
                 for p in client.published]
    return f"publishes: {publishes}\nlog: {[m.message for m in client.log_messages]}"


def _utf16(text: str) -> int:
    return len(text.encode("utf-16-le")) // 2


@pytest.mark.matrix
@pytest.mark.asyncio(loop_scope="session")
async def test_open_publishes_located_diagnostics(
        workspace: pathlib.Path, shared_client: FxClient) -> None:
    net = workspace / "pkg" / "net.py"
    client = shared_client
    uri = client.open(net)
    diagnostics = await client.diagnostics_for(uri, version=1)

    assert all(d.source == "fx-lsp" for d in diagnostics)
    line, text = _line_of(net, "return x * len(x)")
    (len_diagnostic,) = [
        d for d in _by_code(diagnostics, "FX002") if d.range.start.line == line
    ]
    assert len_diagnostic.range == types.Range(
        start=types.Position(line=line, character=text.index("len(x)")),
        end=types.Position(line=line, character=text.index("len(x)") + len("len(x)")),
    )
    assert len_diagnostic.severity == types.DiagnosticSeverity.Error
    assert len_diagnostic.code_description.href == "https://fx-lsp.github.io/fx-lsp/codes/FX002/"

    # The helper's own line gets the failure, with the call chain as related information.
    helper_line, _ = _line_of(net, "if x.mean() > 0:")
    (in_helper,) = [d for d in diagnostics if d.range.start.line == helper_line]
    assert in_helper.code == "FX001"
    (related,) = in_helper.related_information
    assert related.message == "helper() called from forward()"
    assert related.location.range.start.line == _line_of(net, "return helper(x) + 1")[0]

    # Failures outside the class body also mark the class name.
    messages = [d.message for d in diagnostics]
    assert (
        "UsesHelper is not FX-traceable: 1 failure (first: control flow at net.py:8)"
        in messages
    )
    assert (
        "UsesBlock is not FX-traceable: 1 failure (first: control flow at layers.py:10)"
        in messages
    )
    (block_summary,) = [d for d in diagnostics if d.message.startswith("UsesBlock")]
    assert block_summary.range.start.line == _line_of(net, "class UsesBlock")[0]
    assert block_summary.related_information[0].location.uri.endswith("pkg/layers.py")

    (unused,) = _by_code(diagnostics, "FX200")
    assert unused.severity == types.DiagnosticSeverity.Hint
    assert list(unused.tags) == [types.DiagnosticTag.Unnecessary]
    assert unused.range.start.line == _line_of(net, "self.unused = ")[0]

    # NeedsArgs is traced with guessed arguments: one Information note says so.
    (guessed,) = [d for d in diagnostics if "NeedsArgs" in d.message]
    assert (guessed.code, guessed.severity) == ("FX104",
                                                types.DiagnosticSeverity.Information)
    assert guessed.message.startswith(
        "NeedsArgs was traced with guessed arguments: width=16.")

    traced = await wait_for(lambda: [t for t in client.traced if t["uri"] == uri])
    assert traced[0]["version"] == 1
    assert set(traced[0]["classes"]) >= {"Traceable", "UsesLen", "NeedsArgs", "Emoji"}
    await wait_for(lambda: client.statuses and client.statuses[-1]["state"] == "idle")
    assert any(s["state"] == "tracing" and s["pending"] >= 1 for s in client.statuses)


@pytest.mark.slow  # over 12 s in the loaded fast tier
async def test_columns_follow_the_negotiated_encoding(workspace: pathlib.Path) -> None:
    net = workspace / "pkg" / "net.py"
    line, text = _line_of(net, "😀")
    start = text.index("len(x)")
    for encodings, expected in (
        (None, _utf16(text[:start])),
        (["utf-8"], len(text[:start].encode("utf-8"))),
        (["utf-32"], start),
    ):
        async with session(workspace, encodings=encodings) as client:
            uri = client.open(net)
            diagnostics = await client.diagnostics_for(uri, version=1)
            (emoji,) = [d for d in diagnostics if d.range.start.line == line]
            assert emoji.range.start.character == expected, encodings
    assert _utf16(text[:start]) != start  # the line really tells the encodings apart


@pytest.mark.slow
async def test_settings_severity_and_not_traced(workspace: pathlib.Path) -> None:
    net = workspace / "pkg" / "net.py"
    options = {"fxLsp": {"severity": "warning", "showNotTraced": True}}
    async with session(workspace, options=options) as client:
        uri = client.open(net)
        diagnostics = await client.diagnostics_for(uri, version=1)
        assert {d.severity for d in _by_code(diagnostics, "FX002")} == {
            types.DiagnosticSeverity.Warning
        }
        (not_traced,) = [d for d in diagnostics if "NeedsArgs" in d.message]
        assert not_traced.severity == types.DiagnosticSeverity.Information
        assert not_traced.range.start.line == _line_of(net, "class NeedsArgs")[0]
        assert "width" in not_traced.message


@pytest.mark.slow
async def test_invalid_setting_reported_once_and_default_used(workspace: pathlib.Path) -> None:
    async with session(workspace, options={"run": "sometimes", "debounceMs": -3}) as client:
        uri = client.open(workspace / "pkg" / "net.py")
        await client.diagnostics_for(uri, version=1)  # onSave (the default) still traces on open
        client.workspace_did_change_configuration(
            types.DidChangeConfigurationParams(settings={"fxLsp": {"run": "sometimes"}})
        )
        await asyncio.sleep(0.5)
        # Both come from one read of the settings: one pop-up, each problem logged once.
        assert len([m for m in client.messages if "problems in" in m.message]) == 1
        invalid = [m.message for m in client.log_messages if "invalid" in m.message]
        assert len([m for m in invalid if "run = 'sometimes'" in m]) == 1, invalid
        assert len([m for m in invalid if "debounceMs" in m]) == 1, invalid


@pytest.mark.slow
async def test_unsaved_imported_buffer_is_traced_and_dependents_retraced(
    workspace: pathlib.Path,
) -> None:
    net, layers = workspace / "pkg" / "net.py", workspace / "pkg" / "layers.py"
    async with session(workspace) as client:
        net_uri = client.open(net)
        layers_uri = client.open(layers)
        before = await client.diagnostics_for(net_uri, version=1)
        assert any(d.message.startswith("UsesBlock") for d in before)
        await client.diagnostics_for(layers_uri, version=1)

        # Fix Block in the editor only: the disk keeps the failing version.
        fixed = layers.read_text().replace(
            "        if x.sum() > 0:\n            return self.lin(x)\n        return x\n",
            "        return self.lin(x)\n",
        )
        mark = len(client.published)
        version = client.replace_text(layers_uri, fixed)
        client.save(layers_uri)
        layers_after = await client.diagnostics_for(layers_uri, version=version, after=mark)
        assert list(layers_after) == []
        net_after = await client.diagnostics_for(net_uri, version=1, after=mark)
        assert not any(d.message.startswith("UsesBlock") for d in net_after)
        assert "if x.sum() > 0:" in layers.read_text()


@pytest.mark.slow  # over 12 s in the loaded fast tier
async def test_outdated_job_is_cancelled_and_its_result_dropped(tmp_path: pathlib.Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'slow'\n")
    marker = tmp_path / "finished.txt"
    slow = tmp_path / "slow.py"
    slow_source = (
        "import pathlib\nimport time\n\nfrom torch import nn\n\n\n"
        "class Slow(nn.Module):\n"
        "    def forward(self, x):\n"
        "        time.sleep(4)\n"
        f"        pathlib.Path({str(marker)!r}).write_text('done')\n"
        "        return x\n"
    )
    slow.write_text(slow_source)
    warm = tmp_path / "warm.py"
    warm.write_text(
        "from torch import nn\n\n\nclass Warm(nn.Module):\n"
        "    def forward(self, x):\n        return x\n"
    )
    async with session(tmp_path) as client:
        await client.diagnostics_for(client.open(warm), version=1)  # the worker is up
        uri = client.open(slow)
        await asyncio.sleep(1.0)  # the child is inside time.sleep now
        fast = slow_source.replace("        time.sleep(4)\n", "").replace(
            "        return x\n", "        return len(x)\n"
        )
        fast = fast.replace(f"        pathlib.Path({str(marker)!r}).write_text('done')\n", "")
        version = client.replace_text(uri, fast)
        client.save(uri)
        diagnostics = await client.diagnostics_for(uri, version=version)
        assert [d.code for d in diagnostics] == ["FX002"]
        await asyncio.sleep(4.5)
        assert not marker.exists(), "the outdated trace ran on instead of being killed"
        assert [p.version for p in client.published if p.uri == uri] == [version]


@pytest.mark.asyncio(loop_scope="session")
async def test_close_clears_diagnostics(workspace: pathlib.Path, shared_client: FxClient) -> None:
    client = shared_client
    uri = client.open(workspace / "pkg" / "net.py")
    assert await client.diagnostics_for(uri, version=1)
    client.text_document_did_close(
        types.DidCloseTextDocumentParams(text_document=types.TextDocumentIdentifier(uri=uri))
    )
    await wait_for(lambda: not client.latest(uri).diagnostics, 5, "cleared diagnostics")


@pytest.mark.slow
async def test_on_type_traces_only_the_newest_version_after_the_debounce(
    workspace: pathlib.Path,
) -> None:
    net = workspace / "pkg" / "net.py"
    text = net.read_text()
    async with session(workspace, options={"run": "onType", "debounceMs": 300}) as client:
        uri = client.open(net)
        await client.diagnostics_for(uri, version=1)
        mark = len(client.published)
        for index in range(5):
            version = client.replace_text(uri, text + f"\n# edit {index}\n")
            await asyncio.sleep(0.05)
        final = client.replace_text(uri, text.replace("return x * len(x)", "return x * 2"))
        after = await client.diagnostics_for(uri, version=final, after=mark)
        assert len(_by_code(after, "FX002")) == 1  # only the Emoji one is left
        await asyncio.sleep(0.5)
        assert [p.version for p in client.published[mark:] if p.uri == uri] == [final]
        assert version == final - 1


@pytest.mark.asyncio(loop_scope="session")
async def test_requests_do_not_wait_for_a_trace(
        workspace: pathlib.Path, shared_client: FxClient) -> None:
    """A hover sent while the document's first trace runs (its import takes 5 s) is answered
    at once, with nothing: it arrives before the trace's diagnostics."""
    slow = workspace / "pkg" / "slow.py"
    slow.write_text(
        "import time\n\nfrom torch import nn\n\ntime.sleep(5)\n\n\n"
        "class UsesLen(nn.Module):\n    def forward(self, x):\n        return x * len(x)\n"
    )
    client = shared_client
    uri = client.open(slow)
    result = await client.text_document_hover_async(
        types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            position=types.Position(line=7, character=8),
        )
    )
    assert result is None
    assert not [p for p in client.published if p.uri == uri], "the hover waited"
    assert _by_code(await client.diagnostics_for(uri, version=1, timeout=60), "FX002")


@pytest.mark.slow
async def test_pyproject_settings_apply_per_workspace_folder(tmp_path: pathlib.Path) -> None:
    model = (
        "from torch import nn\n\n\nclass UsesLen(nn.Module):\n"
        "    def forward(self, x):\n        return x * len(x)\n"
    )
    strict, relaxed = tmp_path / "strict", tmp_path / "relaxed"
    for folder in (strict, relaxed):
        folder.mkdir()
        (folder / "model.py").write_text(model)
    (strict / "pyproject.toml").write_text("[project]\nname = 'strict'\n")
    (relaxed / "pyproject.toml").write_text(
        '[project]\nname = "relaxed"\n\n[tool.fx-lsp]\nseverity = "hint"\ndebounce-ms = "soon"\n'
    )
    async with session(strict, folders=[strict, relaxed]) as client:
        strict_uri = client.open(strict / "model.py")
        relaxed_uri = client.open(relaxed / "model.py")
        shown = {uri: await client.diagnostics_for(uri, version=1)
                 for uri in (strict_uri, relaxed_uri)}
        # Once in CI the strict file's first publish at version 1 held nothing (not
        # reproduced since): say every publish and log line if it happens again.
        assert all(len(diagnostics) == 1 for diagnostics in shown.values()), _story(client)
        in_strict, in_relaxed = shown[strict_uri][0], shown[relaxed_uri][0]
        assert in_strict.severity == types.DiagnosticSeverity.Error
        assert in_relaxed.severity == types.DiagnosticSeverity.Hint
        invalid = [m.message for m in client.messages if "invalid debounce-ms" in m.message]
        assert len(invalid) == 1 and "relaxed" in invalid[0]


@pytest.mark.slow  # over 12 s in the loaded fast tier
async def test_one_pyproject_reader_for_the_engine_and_the_editor(tmp_path: pathlib.Path) -> None:
    """``timeout = "soon"`` gives one warning (it gave one from the editor's reader and one
    from the engine's); an unsaved ``leaf-modules`` edit of the open pyproject.toml applies to
    the next trace (the engine read the file on disk)."""
    (tmp_path / "layers.py").write_text(
        "from torch import nn\n\n\nclass Block(nn.Module):\n"
        "    def forward(self, x):\n        return x * len(x)\n"
    )
    (tmp_path / "model.py").write_text(
        "from torch import nn\n\nfrom layers import Block\n\n\nclass Net(nn.Module):\n"
        "    def __init__(self):\n        super().__init__()\n        self.block = Block()\n\n"
        "    def forward(self, x):\n        return self.block(x)\n"
    )
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "w"\n\n[tool.fx-lsp]\ntimeout = "soon"\n')
    async with session(tmp_path) as client:
        uri = client.open(tmp_path / "model.py")
        assert _by_code(await client.diagnostics_for(uri, version=1), "FX002")
        warnings = [m.message for m in client.messages if "timeout" in m.message]
        assert len(warnings) == 1, warnings

        pyproject_uri = from_fs_path(str(pyproject))
        client.text_document_did_open(
            types.DidOpenTextDocumentParams(
                text_document=types.TextDocumentItem(
                    uri=pyproject_uri, language_id="toml", version=1, text=pyproject.read_text()
                )
            )
        )
        client.text_document_did_change(
            types.DidChangeTextDocumentParams(
                text_document=types.VersionedTextDocumentIdentifier(uri=pyproject_uri, version=2),
                content_changes=[
                    types.TextDocumentContentChangeWholeDocument(
                        text='[project]\nname = "w"\n\n'
                        '[tool.fx-lsp]\nleaf-modules = ["layers:Block"]\n'
                    )
                ],
            )
        )
        mark = len(client.published)
        client.save(uri)
        after = await client.diagnostics_for(uri, version=1, after=mark, timeout=60)
        assert not _by_code(after, "FX002"), after
        assert pyproject.read_text().endswith('timeout = "soon"\n')  # only the buffer changed


@pytest.mark.slow
async def test_an_open_file_its_project_excludes_is_not_traced(tmp_path: pathlib.Path) -> None:
    """``exclude`` means the same for an open file as in ``fx-lsp check``: no import, no
    verdict (its diagnostics are cleared)."""
    marker = tmp_path / "imported"
    (tmp_path / "pyproject.toml").write_text('[tool.fx-lsp]\nexclude = ["scratch_*.py"]\n')
    scratch = tmp_path / "scratch_model.py"
    scratch.write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).touch()\n\nfrom torch import nn\n\n\n"
        "class UsesLen(nn.Module):\n    def forward(self, x):\n        return x * len(x)\n"
    )
    async with session(tmp_path) as client:
        uri = client.open(scratch)
        assert await client.diagnostics_for(uri) == []
        assert not marker.exists()
        (tmp_path / "pyproject.toml").write_text("[project]\nname = 'w'\n")
        client.workspace_did_change_watched_files(
            types.DidChangeWatchedFilesParams(
                changes=[
                    types.FileEvent(
                        uri=from_fs_path(str(tmp_path / "pyproject.toml")),
                        type=types.FileChangeType.Changed,
                    )
                ]
            )
        )
        # Once no longer excluded it is traced: the test can tell.
        assert _by_code(await client.diagnostics_for(uri, version=1, timeout=60), "FX002")
        assert marker.exists()
