"""Request handlers over the snapshot of the document a request is about: hover, code actions
and their resolution, inlay hints, code lenses, ``fxLsp/generatedCode``, ``fxLsp/graph`` (a
notebook cell's answers moved into the cell), and the workspace trace command."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from lsprotocol import types

from fx_lsp.features import code_actions, code_lens, fix_all, graph_view, hover, inlay_hints
from fx_lsp.features.snapshot import DocumentSnapshot
from fx_lsp.server import notebooks, workspace_trace
from fx_lsp.server.handlers import Handlers
from fx_lsp.server.protocol import (
    GENERATED_CODE,
    GRAPH,
    TRACE_WORKSPACE,
    CommandProgress,
    JsonText,
    guarded,
    json_text,
)
from fx_lsp.server.session import Session
from fx_lsp.verdicts_by_mode import verdicts_of
from fxcore.model.results import ModuleResult

handlers = Handlers()


@handlers.feature(types.TEXT_DOCUMENT_HOVER)
@guarded()
async def on_hover(session: Session, params: types.HoverParams) -> types.Hover | None:
    snapshot = session.snapshot(params.text_document.uri)
    if snapshot is None:
        return None
    position: types.Position | None = params.position
    cell = session.texts.cell_of(params.text_document.uri)
    if cell is not None:
        position = cell[0].position_to_module(cell[1], params.position)
        if position is None:
            return None  # a line the notebook's module left out
    if hover.lists_fixes(snapshot, position):
        # Planning the quick fixes parses the file (cached per text): in a thread, so that a
        # big file stalls no request.
        answer = await asyncio.to_thread(hover.hover, snapshot, position)
    else:
        answer = hover.hover(snapshot, position)
    return answer if cell is None else notebooks.hover_to_cell(*cell, answer)


@handlers.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, fix_all.FIX_ALL],
        resolve_provider=True
    ),
)
@guarded(default=[])
async def on_code_action(
    session: Session, params: types.CodeActionParams
) -> list[types.CodeAction]:
    snapshot = session.snapshot(params.text_document.uri)
    if snapshot is None:
        return []
    cell = session.texts.cell_of(params.text_document.uri)
    if cell is None and fix_all.requested(params.context.only):
        action = await session.off_loop(fix_all.fix_all_action, snapshot,
                                        session.server.annotates_edits)
        return [action] if action is not None else []
    if cell is None:
        return await session.off_loop(code_actions.code_actions, snapshot, params.context,
                                      params.range, session.server.resolves_code_actions,
                                      session.server.shows_disabled_code_actions)
    notebook, index = cell
    requested = notebook.range_to_module(index, params.range)
    if requested is None:
        return []
    context = types.CodeActionContext(
        diagnostics=[moved for d in params.context.diagnostics
                     if (moved := notebooks.diagnostic_to_module(notebook, index, d))],
        only=params.context.only, trigger_kind=params.context.trigger_kind)
    actions = await session.off_loop(code_actions.code_actions, snapshot, context, requested,
                                     session.server.resolves_code_actions,
                                     session.server.shows_disabled_code_actions)
    return [moved for action in actions
            if (moved := notebooks.code_action_to_cell(notebook, index, action))]


@handlers.feature(types.CODE_ACTION_RESOLVE)
@guarded()
async def on_code_action_resolve(
    session: Session, action: types.CodeAction
) -> types.CodeAction:
    data = action.data
    uri = data.get("uri") if isinstance(data, dict) else getattr(data, "uri", None)
    snapshot = session.snapshot(uri) if isinstance(uri, str) else None
    if snapshot is None:
        return action
    cell = session.texts.cell_of(uri) if isinstance(uri, str) else None
    if cell is None:
        return await session.off_loop(code_actions.resolve, snapshot, action)
    notebook, index = cell
    in_module = types.CodeAction(
        title=action.title, kind=action.kind, is_preferred=action.is_preferred, data=action.data,
        diagnostics=[moved for d in action.diagnostics or []
                     if (moved := notebooks.diagnostic_to_module(notebook, index, d))])
    resolved = await session.off_loop(code_actions.resolve, snapshot, in_module)
    return notebooks.code_action_to_cell(notebook, index, resolved) or action


@handlers.feature(types.TEXT_DOCUMENT_INLAY_HINT)
@guarded(default=[])
def on_inlay_hint(session: Session, params: types.InlayHintParams) -> list[types.InlayHint]:
    snapshot = session.snapshot(params.text_document.uri)
    if snapshot is None:
        return []
    cell = session.texts.cell_of(params.text_document.uri)
    if cell is None:
        return inlay_hints.inlay_hints(snapshot, params.range)
    requested = cell[0].range_to_module(cell[1], params.range)
    if requested is None:
        return []
    return notebooks.inlay_hints_to_cell(*cell, inlay_hints.inlay_hints(snapshot, requested))


@handlers.feature(types.TEXT_DOCUMENT_CODE_LENS)
@guarded(default=[])
def on_code_lens(session: Session, params: types.CodeLensParams) -> list[types.CodeLens]:
    uri = params.text_document.uri
    snapshot, cell = session.snapshot(uri), session.texts.cell_of(uri)
    lenses = code_lens.code_lenses(snapshot) if snapshot is not None else []
    return lenses if cell is None else notebooks.code_lenses_to_cell(*cell, lenses)


def _plain(value: Any) -> Any:
    """pygls hands custom methods their params as namedtuples: back to dicts."""
    if hasattr(value, "_asdict"):
        return {key: _plain(item) for key, item in value._asdict().items()}
    return value


#: An answer about one class of a document, from the request's params.
ClassAnswer = Callable[[DocumentSnapshot, ModuleResult, dict[str, Any]], dict[str, Any]]


async def _answer_about_class(
    session: Session, params: Any, answer: ClassAnswer
) -> JsonText | None:
    """``answer`` about the class that ``{uri, className}`` or ``{uri, position}`` names, from
    the document's latest result. A huge class's answer takes seconds to build and encode: in
    a thread, so that other requests are answered meanwhile (the event loop takes the GIL
    back every switch interval, see ``serve``; ``json_text`` encodes a piece at a time so that
    it can)."""
    params = _plain(params)
    uri = params.get("uri") if isinstance(params, dict) else None
    snapshot = session.snapshot(uri) if isinstance(uri, str) else None
    if snapshot is None:
        return None
    position = params.get("position")
    at = types.Position(line=position["line"], character=position["character"]) \
        if isinstance(position, dict) else None
    cell = session.texts.cell_of(uri) if isinstance(uri, str) else None
    if cell is not None and at is not None:
        at = cell[0].position_to_module(cell[1], at)
    module = code_lens.find_module(snapshot, params.get("className"), at)
    if module is None:
        return None
    if cell is None:
        return await asyncio.to_thread(lambda: json_text(answer(snapshot, module, params)))
    notebook, index = cell

    def in_cells() -> JsonText:
        # The answer as about the cell: its locations in the cells, its lines the cell's.
        found = notebooks.locations_to_cells(notebook, answer(snapshot, module, params))
        found["uri"] = notebook.cells[index].uri
        if "lineNodes" in found:
            found["lineNodes"] = notebooks.line_nodes_to_cell(notebook, index,
                                                              found["lineNodes"])
        return json_text(found)

    return await asyncio.to_thread(in_cells)


@handlers.feature(GENERATED_CODE)
@guarded()
async def on_generated_code(session: Session, params: Any) -> JsonText | None:
    return await _answer_about_class(
        session, params, lambda snapshot, module, _: code_lens.generated_code(snapshot.uri, module))


def _count(params: Any, key: str, default: int, largest: int) -> int:
    """A non-negative integer parameter, ``default`` when absent or not an integer."""
    value = params.get(key) if isinstance(params, dict) else None
    if not isinstance(value, int) or isinstance(value, bool):
        return default
    return min(max(value, 0), largest)


def _graph_page(
    snapshot: DocumentSnapshot, module: ModuleResult, params: dict[str, Any]
) -> dict[str, Any]:
    """The ``fxLsp/graph`` answer: the nodes from ``offset``, at most ``limit`` of them, and
    the version of the result ``module`` comes from. With a ``mode`` param, that mode's graph
    of the class (the first verdict's when the class has no verdict of that mode); ``modes``
    lists the modes the class has a verdict of, for the view's mode switch."""
    verdicts = verdicts_of(snapshot.result.modules, module) if snapshot.result else [module]
    mode = params.get("mode")
    if isinstance(mode, str):
        module = next((other for other in verdicts if other.mode == mode), module)
    offset = _count(params, "offset", 0, len(module.graph))
    limit = max(1, _count(params, "limit", graph_view.NODE_LIMIT, graph_view.NODE_LIMIT))
    return {"uri": snapshot.uri, "version": snapshot.result_version, "mode": module.mode,
            "modes": [verdict.mode for verdict in verdicts],
            **graph_view.graph(module, snapshot.files.lines_of, snapshot.encoding, offset, limit)}


@handlers.feature(GRAPH)
@guarded()
async def on_graph(session: Session, params: Any) -> JsonText | None:
    return await _answer_about_class(session, params, _graph_page)


@handlers.command(TRACE_WORKSPACE)
@guarded(default={"files": 0, "modules": 0, "failed": 0})
async def trace_workspace(session: Session, *args: Any) -> dict[str, int]:
    progress = await CommandProgress.start(session.server.protocol)
    return await workspace_trace.trace_workspace(session, progress)
