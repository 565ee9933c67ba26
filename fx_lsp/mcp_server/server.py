"""``fx-lsp mcp``: fx-lsp's checks as Model Context Protocol tools over stdio, on the official
``mcp`` SDK (the ``fx-lsp[mcp]`` extra). The tools' work is ``fx_lsp.mcp_server.tools``'s; this
module declares them (descriptions, input schemas from the annotations, structured output,
read-only hints) and runs each in a thread, since a trace takes seconds.

Nothing but the protocol goes to stdout: logs, and what the workers print, go to stderr.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from typing import Annotated, Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from fx_lsp.mcp_server.bounded_stdio import serve_bounded_stdio
from fx_lsp.mcp_server.tools import ToolInputError, Tools
from fxcore.api.workers import WORKER_LOG
from fxcore.model.capture_modes import known_modes
from fxcore.model.version import VERSION

INSTRUCTIONS = (
    "fx-lsp tells whether PyTorch nn.Module classes can be captured by torch.fx, "
    "torch.export and torch.compile, without weights or a GPU: it builds each class on the meta "
    "device with guessed arguments and traces it in a separate process. Call `check` after "
    "editing model code; `explain` a code it reports; `fix` applies its quick fixes; `graph` "
    "shows a class's traced graph; `diff` compares the graphs of two git revisions.")
logger = logging.getLogger(__name__)
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                            open_world_hint=False)
Modes = Annotated[list[str] | None, Field(
    description=f"capture modes, each giving its own verdict per class ({', '.join(known_modes())}"
    "); default: the workspace's [tool.fx-lsp] modes, else fx")]


#: The most characters of a tool's error message: an argument it quotes may be megabytes.
MAX_ERROR_CHARACTERS = 2000


def carried(value: Any) -> Any:
    """``value`` (a tool's data: dicts, lists, strings, numbers) with each character that
    UTF-8 cannot encode written as its escape (``caf\\udce9.py``): a file name that is not
    UTF-8 is a string with lone surrogates, which JSON-RPC messages cannot hold, spelled as
    ``fx-lsp check --output-format json`` and the terminal formats spell it."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {carried(key): carried(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [carried(item) for item in value]
    return value


def error_text(message: str) -> str:
    """A tool error's message as the model reads it: carried (``carried``), and cut to
    ``MAX_ERROR_CHARACTERS`` with how much was left out."""
    message = carried(message)
    if len(message) <= MAX_ERROR_CHARACTERS:
        return message
    return (f"{message[:MAX_ERROR_CHARACTERS]}... ({len(message) - MAX_ERROR_CHARACTERS:,} "
            "more characters left out)")


async def _run(tools: Tools, function: Any, *args: Any) -> Any:
    """``function(*args)`` in a thread, its data carried (``carried``); bad input becomes the
    tool's error, said to the model, and so does anything else raised, with its reason (the
    SDK would say only "Error executing tool"), its traceback logged on stderr. A call the
    client cancels (the SDK cancels its task) stops its trace (``Tools.stop``)."""
    cancelled = threading.Event()
    try:
        # Abandoned when the call is cancelled: the thread ends as soon as its trace has
        # stopped, and ``Tools.close`` waits for it, rather than the server for the trace.
        return carried(await anyio.to_thread.run_sync(tools.call, cancelled, function, *args,
                                                      abandon_on_cancel=True))
    except anyio.get_cancelled_exc_class():
        tools.stop(cancelled)
        raise
    except ToolInputError as error:
        raise ToolError(error_text(str(error))) from error
    except Exception as error:
        logger.exception("fx-lsp mcp: a tool call failed")
        raise ToolError(error_text(f"fx-lsp failed: {type(error).__name__}: {error}")
                        ) from error


def build(tools: Tools) -> MCPServer:
    server = MCPServer("fx-lsp", version=VERSION, instructions=INSTRUCTIONS)

    @server.tool(annotations=READ_ONLY)
    async def check(
        paths: Annotated[list[str] | None, Field(
            description="files or folders to check, relative to the workspace (default: the "
            "whole workspace)")] = None,
        modes: Modes = None,
        loop_of_calls: Annotated[bool, Field(
            description="run compile mode's loop of calls, which looks for recompilations "
            "(FX506...) for seconds; false: compile's single call alone, and the report's "
            "`pending` names what it lacks (`compile-loop`)")] = True,
    ) -> dict[str, Any]:
        """Check PyTorch nn.Module classes: for each class and capture mode its verdict
        (traced, failed, not traced and why) and each problem's file, line, column, code,
        message and the titles of its fixes. The same report as `fx-lsp check --output-format
        json`. Unchanged files are answered from the cache."""
        return await _run(tools, tools.check, paths, modes, loop_of_calls)

    @server.tool(annotations=READ_ONLY)
    async def explain(code: Annotated[str, Field(
            description="a code fx-lsp reports, such as FX002 or GB0170")]) -> dict[str, str]:
        """The documentation of a problem code: what it means, why tracing fails there, and
        how to fix it."""
        return await _run(tools, tools.explain, code)

    @server.tool(annotations=READ_ONLY)
    async def graph(
        path: Annotated[str, Field(description="the Python file or notebook of the class")],
        class_name: Annotated[str, Field(description="the nn.Module class's name")],
        mode: Annotated[str | None, Field(
            description="the capture mode whose graph to give (default: fx)")] = None,
    ) -> dict[str, Any]:
        """A class's traced graph: the forward torch.fx generates, and each node (name, op,
        target, inputs, shape, and the source file and line that created it)."""
        return await _run(tools, tools.graph, path, class_name, mode)

    @server.tool(annotations=ToolAnnotations(
        read_only_hint=False, destructive_hint=False, idempotent_hint=False,
        open_world_hint=False))
    async def fix(
        path: Annotated[str, Field(description="the Python file or notebook to fix")],
        code: Annotated[str | None, Field(
            description="the code of the problem to fix, such as FX002")] = None,
        line: Annotated[int | None, Field(description="the problem's line (1-based)")] = None,
        apply: Annotated[bool, Field(
            description="write the fix to the file (default: only return the diff)")] = False,
        unsafe: Annotated[bool, Field(
            description="also make fixes that can change what the code computes")] = False,
    ) -> dict[str, Any]:
        """Fix the problems of a file with a given code and/or on a given line: the edit as a
        unified diff, written to the file only when `apply` is true."""
        return await _run(tools, tools.fix, path, code, line, apply, unsafe)

    @server.tool(annotations=READ_ONLY)
    async def diff(
        base: Annotated[str, Field(description="the git revision before the change")],
        head: Annotated[str | None, Field(
            description="the git revision after it (default: the working tree)")] = None,
        modes: Modes = None,
    ) -> dict[str, Any]:
        """What a change did to each class's graphs between two git revisions: the classes of
        the changed files and of the files importing them, checked at both, per capture mode
        (nodes added and removed, verdicts, graph breaks). As `fx-lsp diff --output-format
        json`."""
        return await _run(tools, tools.diff, base, head, modes)

    return server


def serve_mcp(workspace: str, trusted: bool) -> int:
    """Serve the workspace's tools on stdio until the client closes the connection."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    # Every line the workers print, as ``fx-lsp check -v`` shows them: stderr is the log.
    WORKER_LOG.setLevel(logging.DEBUG)
    # The command line's paths in reports are relative to where it runs: the workspace.
    os.chdir(workspace)
    tools = Tools(workspace, trusted)
    try:
        anyio.run(serve_bounded_stdio, build(tools))
    finally:
        tools.close()
    return 0
