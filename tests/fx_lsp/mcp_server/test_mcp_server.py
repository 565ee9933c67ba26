"""``fx-lsp mcp`` driven by the official ``mcp`` SDK's own client over stdio: the tools listed
with schemas and read-only hints, each called on small workspaces and on examples/; ``check``
answers what ``fx-lsp check --output-format json`` prints; bad input is a tool error with a clear
message, after which the server still answers; without the SDK the command says what to
install."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

mcp = pytest.importorskip("mcp", reason="the mcp extra (pip install 'fx-lsp[mcp]')")
from mcp import ClientSession  # noqa: E402
from mcp_sessions import mcp_session  # noqa: E402

from engine_support import USES_LEN_AND_FINE  # noqa: E402

REPO = pathlib.Path(__file__).parents[3]


def _environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


@asynccontextmanager
async def _client(workspace: pathlib.Path, *options: str) -> AsyncIterator[ClientSession]:
    with tempfile.TemporaryFile("w+") as errors:
        async with mcp_session(workspace, errors, *options) as session:
            yield session


@pytest.fixture
def project(tmp_path: pathlib.Path) -> pathlib.Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    # A time-out load cannot reach: a job that timed out is not cached, and the test compares
    # the tool's result with the command line's answered from the cache.
    (workspace / "pyproject.toml").write_text("[project]\nname = 'w'\n\n[tool.fx-lsp]\n"
                                              "timeout = 900\n")
    (workspace / "models.py").write_text(USES_LEN_AND_FINE)
    (workspace / "broken.py").write_text("from torch import nn\n\nclass Broken(nn.Module:\n")
    return workspace


def _uncached(report: dict[str, Any] | None) -> dict[str, Any]:
    """The report but for how many classes came from the cache."""
    assert report is not None
    return {**report, "summary": {**report["summary"], "cached": None}}


async def _error(session: ClientSession, tool: str, arguments: dict[str, Any]) -> str:
    result = await session.call_tool(tool, arguments)
    assert result.is_error, (tool, arguments, result)
    return " ".join(part.text for part in result.content if part.type == "text")


async def test_tools_are_listed_and_bad_input_is_a_tool_error(project: pathlib.Path) -> None:
    async with _client(project) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert set(tools) == {"check", "explain", "graph", "fix", "diff"}
        for name, tool in tools.items():
            assert tool.description and tool.input_schema["type"] == "object", name
            assert tool.output_schema is not None, name
            assert tool.annotations is not None
            assert tool.annotations.read_only_hint is (name != "fix"), name
        assert tools["graph"].input_schema["required"] == ["path", "class_name"]

        explained = await session.call_tool("explain", {"code": "fx002"})
        assert not explained.is_error
        assert explained.structured_content is not None
        assert explained.structured_content["code"] == "FX002"
        assert "len()" in explained.structured_content["documentation"]

        assert "unknown code 'FX999'" in await _error(session, "explain", {"code": "FX999"})
        assert "no such file or folder: missing.py" in await _error(
            session, "check", {"paths": ["missing.py"]})
        outside = await _error(session, "check", {"paths": ["../"]})
        assert "outside the workspace" in outside
        assert "give the code" in await _error(session, "fix", {"path": "models.py"})
        assert "unknown capture mode" in (await _error(
            session, "check", {"paths": ["models.py"], "modes": ["nope"]})).lower()
        # Still serving.
        assert not (await session.call_tool("explain", {"code": "FX001"})).is_error


@pytest.mark.slow  # a server of its own (4 s), its engine warming up beside it
async def test_check_reads_pyproject_again_when_it_changes(tmp_path: pathlib.Path) -> None:
    """The server keeps each workspace's parsed [tool.fx-lsp] between calls: an edit of
    pyproject.toml between two checks is what the second one reports with, as the command
    line does. (A file with no class: nothing is traced.)"""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "plain.py").write_text("x = 1\n")
    settings = workspace / "pyproject.toml"

    def printed() -> dict[str, Any]:
        done = subprocess.run(
            [sys.executable, "-m", "fx_lsp", "check", "plain.py", "--output-format", "json"],
            capture_output=True, text=True, cwd=workspace, env=_environment(), timeout=120)
        return json.loads(done.stdout)

    async with _client(workspace) as session:
        for setting, named in (("timeout = 'soon'", "'timeout'"), ("timeout = 30", None),
                               ("device = 'tpu'", "'device'"), ("timeout = 'soon'", "'timeout'")):
            settings.write_text(f"[tool.fx-lsp]\n{setting}\n")
            checked = await session.call_tool("check", {"paths": ["plain.py"]})
            assert not checked.is_error, checked.content
            report = checked.structured_content
            assert report is not None
            assert [named in problem for problem in report["config_problems"]] == (
                [True] if named else []), (setting, report["config_problems"])
            if named == "'device'":
                assert _uncached(report) == _uncached(printed())


def test_kept_configs_are_not_changed_by_a_run_s_modes(tmp_path: pathlib.Path) -> None:
    """A run's --mode and time-out apply to its copy of the config the server keeps, not to
    the next run's."""
    from fx_lsp.mcp_server.project_configs import ProjectConfigs
    from fxcore.api.check import check_jobs

    (tmp_path / "pyproject.toml").write_text("[tool.fx-lsp]\nmodes = ['fx', 'export']\n")
    (tmp_path / "models.py").write_text(USES_LEN_AND_FINE)
    configs = ProjectConfigs()
    path = str(tmp_path / "models.py")
    overridden, _ = check_jobs([path], 5.0, ("compile",), configs)
    assert (overridden[0].config.modes, overridden[0].config.timeout) == (("compile",), 5.0)
    plain, _ = check_jobs([path], None, None, configs)
    assert (plain[0].config.modes, plain[0].config.timeout) == (("fx", "export"), 20.0)


@pytest.mark.slow  # a server of its own
async def test_an_untrusted_workspace_runs_no_code(project: pathlib.Path) -> None:
    marker = project / "imported"
    (project / "models.py").write_text(f"import pathlib\npathlib.Path({str(marker)!r}).touch()\n"
                                       + USES_LEN_AND_FINE)
    async with _client(project, "--untrusted") as session:
        for tool, arguments in (("check", {}), ("graph", {"path": "models.py",
                                                          "class_name": "Fine"}),
                                ("fix", {"path": "models.py", "code": "FX002"}),
                                ("diff", {"base": "HEAD"})):
            assert "not trusted" in await _error(session, tool, arguments), tool
        assert not (await session.call_tool("explain", {"code": "FX002"})).is_error
    assert not marker.exists()


def test_without_the_sdk_the_command_says_what_to_install(tmp_path: pathlib.Path) -> None:
    # The SDK made unimportable, as in an install without the extra.
    hide = ("import sys, importlib.abc\n"
            "class Hide(importlib.abc.MetaPathFinder):\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'mcp' or name.startswith('mcp.'):\n"
            "            raise ImportError(name)\n"
            "sys.meta_path.insert(0, Hide())\n"
            "from fx_lsp.cli.main import main\n"
            "sys.exit(main(['mcp']))\n")
    done = subprocess.run([sys.executable, "-c", hide], capture_output=True, text=True,
                          cwd=tmp_path, env=_environment(), timeout=60)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "fx-lsp mcp: the MCP server needs the official mcp SDK 2.x: pip install 'fx-lsp[mcp]'"]


@pytest.mark.slow  # traces on a fresh engine, then the same check as a process
async def test_check_graph_and_fix_on_a_workspace(project: pathlib.Path) -> None:
    async with _client(project) as session:
        checked = await session.call_tool("check", {"paths": ["models.py", "broken.py"]})
        assert not checked.is_error, checked.content
        printed = subprocess.run(
            [sys.executable, "-m", "fx_lsp", "check", "models.py", "broken.py",
             "--output-format", "json"],
            capture_output=True, text=True, cwd=project, env=_environment(), timeout=300)
        assert printed.returncode == 1, printed.stderr
        report = json.loads(printed.stdout)
        # One cache: the command line was answered from what the tool traced.
        assert report["summary"]["cached"] == report["summary"]["classes"] == 2, (
            report["summary"], checked.structured_content)
        assert _uncached(checked.structured_content) == _uncached(report)
        assert {d["code"] for d in report["diagnostics"]} >= {"FX002"}

        graph = await session.call_tool("graph", {"path": "models.py", "class_name": "Fine"})
        assert not graph.is_error, graph.content
        shown = graph.structured_content
        assert shown is not None and shown["status"] == "traceable"
        assert "relu" in shown["generated_code"]
        assert any(node["line"] == 16 and node["target"].endswith("relu")
                   for node in shown["nodes"]), shown["nodes"]
        assert "no class Nope" in await _error(
            session, "graph", {"path": "models.py", "class_name": "Nope"})
        # A file that does not parse: why, in the error.
        assert "broken.py" in await _error(
            session, "graph", {"path": "broken.py", "class_name": "Broken"})

        before = (project / "models.py").read_text()
        planned = await session.call_tool("fix", {"path": "models.py", "code": "FX002"})
        assert not planned.is_error, planned.content
        plan = planned.structured_content
        assert plan is not None and not plan["applied"]
        assert '+torch.fx.wrap("len")' in plan["diff"], plan["diff"]
        assert [fixed["code"] for fixed in plan["fixed"]] == ["FX002"]
        assert (project / "models.py").read_text() == before
        done = await session.call_tool("fix", {"path": "models.py", "line": 7, "apply": True})
        assert not done.is_error and done.structured_content is not None
        assert done.structured_content["applied"]
        assert 'torch.fx.wrap("len")' in (project / "models.py").read_text()


@pytest.mark.slow  # two revisions checked
async def test_diff_between_revisions(project: pathlib.Path) -> None:
    def git(*arguments: str) -> None:
        subprocess.run(["git", *arguments], cwd=project, check=True, capture_output=True)

    git("init", "-q")
    git("-c", "user.name=t", "-c", "user.email=t@t", "add", "models.py", "pyproject.toml")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    (project / "models.py").write_text(USES_LEN_AND_FINE.replace("x * len(x)", "x * x.shape[0]"))
    async with _client(project) as session:
        changed = await session.call_tool("diff", {"base": "HEAD"})
        assert not changed.is_error, changed.content
        printed = subprocess.run(
            [sys.executable, "-m", "fx_lsp", "diff", "HEAD", "--output-format", "json"],
            capture_output=True, text=True, cwd=project, env=_environment(), timeout=300)
        assert changed.structured_content == json.loads(printed.stdout)
        assert "UsesLen" in json.dumps(changed.structured_content)
        assert "bad revision" in (await _error(session, "diff", {"base": "no-such-rev"})) \
            or "no-such-rev" in (await _error(session, "diff", {"base": "no-such-rev"}))


@pytest.mark.slow  # the examples' classes traced
async def test_check_on_the_examples() -> None:
    examples = REPO / "examples"
    async with _client(examples) as session:
        checked = await session.call_tool("check", {"paths": ["models/gated.py"]})
        assert not checked.is_error, checked.content
        printed = subprocess.run(
            [sys.executable, "-m", "fx_lsp", "check", "models/gated.py", "--output-format",
             "json"], capture_output=True, text=True, cwd=examples, env=_environment(),
            timeout=300)
        assert _uncached(checked.structured_content) == _uncached(json.loads(printed.stdout))


async def test_names_not_utf8_links_out_and_bad_arguments(tmp_path: pathlib.Path) -> None:
    """Nothing here is traced: a folder whose name is not UTF-8, with a [tool.fx-lsp] problem
    that names it, and a link out of the workspace, refused before any import. Its check
    answers (it was a bare "Error executing tool check": the path could not be serialised),
    spelling the name as the command line's report does; errors always say why, and a huge
    argument is not echoed whole."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "pyproject.toml").write_text("[project]\nname = 'w'\n")
    outside = tmp_path / "outside.py"
    outside.write_text(f"import pathlib\npathlib.Path({str(tmp_path / 'IMPORTED')!r}).touch()\n"
                       + USES_LEN_AND_FINE)
    (workspace / "linked.py").symlink_to(outside)
    odd = os.path.join(os.fsencode(workspace), b"caf\xe9")
    os.mkdir(odd)
    with open(os.path.join(odd, b"pyproject.toml"), "w") as settings:
        settings.write("[tool.fx-lsp]\ntimeout = 'soon'\n")
    with open(os.path.join(odd, b"plain.py"), "w") as plain:
        plain.write("x = 1\n")
    async with _client(workspace) as session:
        checked = await session.call_tool("check", {})
        assert not checked.is_error, checked.content
        report = checked.structured_content
        assert report is not None
        assert any("caf\\udce9" in problem for problem in report["config_problems"]), report
        [refused] = [d for d in report["diagnostics"] if d["path"] == "linked.py"]
        assert refused["code"] == "FX100" and "leads out of the workspace" in refused["message"]
        assert not (tmp_path / "IMPORTED").exists()

        assert "NUL" in await _error(session, "check", {"paths": ["a\0b.py"]})
        huge = "X" * 1_000_000
        for tool, arguments in (("explain", {"code": huge}), ("check", {"paths": [huge]})):
            message = await _error(session, tool, arguments)
            assert len(message) < 5000 and "characters left out" in message, message[:200]


def test_an_unexpected_error_says_its_reason(tmp_path: pathlib.Path) -> None:
    """Anything a tool raises reaches the model with its reason (the SDK alone says only
    "Error executing tool check")."""
    import anyio
    from mcp.server.mcpserver.exceptions import ToolError

    from fx_lsp.mcp_server.server import _run
    from fx_lsp.mcp_server.tools import Tools

    def too_deep() -> None:
        raise RecursionError("maximum recursion depth exceeded")

    with pytest.raises(ToolError) as raised:
        anyio.run(_run, Tools(str(tmp_path), True), too_deep)
    assert type(raised.value) is ToolError
    assert "RecursionError: maximum recursion depth exceeded" in str(raised.value)
