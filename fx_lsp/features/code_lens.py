"""Code lenses above each traced class (its verdict, which opens the generated code, and
"Show graph"), and the ``fxLsp/generatedCode`` answer behind the first."""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from fx_lsp.escaping import label
from fx_lsp.features import positions
from fx_lsp.features.diagnostics import class_extents
from fx_lsp.features.snapshot import DocumentSnapshot
from fx_lsp.verdicts_by_mode import modes_line, verdicts_of
from fxcore.model.capture_modes import DEFAULT_MODE
from fxcore.model.results import ModuleResult, first_verdicts
from fxcore.reporting.parent_arguments import parent_description

SHOW_GENERATED_CODE = "fxLsp.showGeneratedCode"
SHOW_GRAPH = "fxLsp.showGraph"


def title(module: ModuleResult) -> str:
    built_by = parent_description(module)
    verdict = _verdict_title(module)
    if built_by is not None:
        return f"{verdict} · traced as built by {label(built_by)}"
    if module.arguments is not None and module.arguments.origin == "guessed":
        return f"{verdict} · guessed arguments"
    return verdict


def _verdict_title(module: ModuleResult) -> str:
    if module.status == "traceable":
        return f"FX: traceable · {module.node_count} nodes"
    if module.status == "not-traced":
        # Another mode's reason is its own (no example inputs, an operator the meta device
        # cannot run: FX404), not the constructor's arguments.
        return "FX: not traced (needs arguments)" if module.mode == DEFAULT_MODE \
            else f"FX: not traced ({module.mode})"
    count = len(module.failures)
    return f"FX: {count} failure{'s' * (count != 1)}"


def code_lenses(snapshot: DocumentSnapshot) -> list[types.CodeLens]:
    uri, result = snapshot.uri, snapshot.result
    lenses = []
    modules = result.modules if result else []
    for module in first_verdicts(modules):
        start = positions.to_lsp(snapshot.lines, module.line, module.column, snapshot.encoding)
        verdicts = verdicts_of(modules, module)
        commands = [(title(module) if len(verdicts) == 1 else label(modes_line(verdicts)),
                     SHOW_GENERATED_CODE)]
        if module.graph:
            commands.append(("Show graph", SHOW_GRAPH))
        lenses.extend(
            types.CodeLens(
                range=types.Range(start=start, end=start),
                command=types.Command(title=text, command=command,
                                      arguments=[uri, module.class_name]),
            )
            for text, command in commands
        )
    return lenses


def find_module(
    snapshot: DocumentSnapshot, class_name: str | None, position: types.Position | None
) -> ModuleResult | None:
    """The class named, else the class whose body holds the position."""
    modules = snapshot.result.modules if snapshot.result else []
    if class_name is not None:
        return next((m for m in modules if m.class_name == class_name), None)
    if position is None:
        return None
    line, _ = positions.from_lsp(snapshot.lines, position, snapshot.encoding)
    extents = class_extents(snapshot.lines)
    for module in modules:
        first, last = extents.get(module.class_name, (module.line, module.line))
        if first <= line <= last:
            return module
    return None


#: The longest generated code sent, in characters (a 200,000-node class generated 24.5 MB).
GENERATED_CODE_LIMIT = 1_000_000
#: The most nodes ``lineNodes`` lists in all (a loop's line makes one per iteration).
LINE_NODES_LIMIT = 5_000


def _capped_code(code: str | None) -> str | None:
    """``code`` up to the last whole line within the limit, then a comment saying what was
    left out."""
    if code is None or len(code) <= GENERATED_CODE_LIMIT:
        return code
    kept = code[:code.rfind("\n", 0, GENERATED_CODE_LIMIT) + 1]
    left_out = code[len(kept):]
    return (f"{kept}# fx-lsp: {len(left_out.splitlines()):,} more lines "
            f"({len(left_out):,} characters) of generated code left out.\n")


def _line_nodes(module: ModuleResult) -> dict[str, list[dict[str, str]]]:
    found: dict[str, list[dict[str, str]]] = {}
    room = LINE_NODES_LIMIT
    for (path, line), nodes in module.line_nodes.items():
        if path != module.path or room <= 0:
            continue
        found[str(line)] = [{"name": n.name, "op": n.op, "target": n.target}
                            for n in nodes[:room]]
        room -= len(found[str(line)])
    return found


def generated_code(uri: str, module: ModuleResult) -> dict[str, Any]:
    """The ``fxLsp/generatedCode`` result (docs/protocol.md): line
    map for this file only; both bounded."""
    return {
        "uri": uri,
        "className": module.class_name,
        "qualifiedName": module.qualified_name,
        "status": module.status,
        "code": _capped_code(module.generated_code),
        "nodeCount": module.node_count,
        "instantiatedOn": module.instantiated_on,
        "traceSeconds": module.trace_seconds,
        "lineNodes": _line_nodes(module),
    }
