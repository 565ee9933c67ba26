"""fxcore's rooms import downwards only, the order of the pipeline: the registry of codes, the
shared data model, the workspace side, the worker <-> host protocol, the worker, the host, the
report, the fixes, the checking pipeline that leads jobs through the host to the report, and
the API the adapters call (check, explain, graph, fix, diff as functions returning data).
fx_lsp (the adapters) sits on top, in rooms of its own: the editor features (one module per
LSP feature over a document snapshot), the server (its session, handlers and notebooks), the
MCP server and the command line (which starts the MCP server); its top level is the front
door (the ``fx-lsp`` script) and the few helpers every room shares. An import that goes up
or sideways is a design change, to be made here on purpose.

Imports are read as in ``test_import_cycles``: every one, deferred and ``TYPE_CHECKING`` ones
included. The host starts workers from the zygote, so the zygote and what it preloads are
the host's only modules that import the worker; the CLI and the server import neither it nor
torch (``test_host_imports``).
"""

from __future__ import annotations

import pytest
from test_import_cycles import ROOT, imported_modules, module_files

#: Each room and the rooms below it that it may import.
MAY_IMPORT: dict[str, frozenset[str]] = {
    "rules": frozenset(),
    "model": frozenset({"rules"}),
    "workspace": frozenset({"rules", "model"}),
    "protocol": frozenset({"rules", "model", "workspace"}),
    "worker": frozenset({"rules", "model", "workspace", "protocol"}),
    "host": frozenset({"rules", "model", "workspace", "protocol"}),
    "reporting": frozenset({"rules", "model", "workspace"}),
    "fixing": frozenset({"rules", "model", "workspace", "reporting"}),
    "checking": frozenset({"rules", "model", "workspace", "host", "reporting"}),
    # The engine's API for the adapters: check, explain, graph, fix and diff.
    "api": frozenset({"rules", "model", "workspace", "host", "reporting", "fixing",
                      "checking"}),
}
#: What the adapters may import of fxcore: every room but the worker's.
ADAPTERS_MAY_IMPORT = frozenset(MAY_IMPORT) - {"worker"}
#: The adapters' rooms: the shared helpers at fx_lsp's top level, then each room and the
#: adapter rooms below it.
MAY_IMPORT |= {
    "fx_lsp": ADAPTERS_MAY_IMPORT,
    "fx_lsp.features": ADAPTERS_MAY_IMPORT | {"fx_lsp"},
    "fx_lsp.server": ADAPTERS_MAY_IMPORT | {"fx_lsp", "fx_lsp.features"},
    # The MCP server calls the engine's API as the command line does: it imports nothing of
    # the command line, which starts it (``fx-lsp mcp``).
    "fx_lsp.mcp_server": ADAPTERS_MAY_IMPORT | {"fx_lsp", "fx_lsp.features", "fx_lsp.server"},
    "fx_lsp.cli": ADAPTERS_MAY_IMPORT | {"fx_lsp", "fx_lsp.features", "fx_lsp.server",
                                         "fx_lsp.mcp_server"},
}
#: fx_lsp's front door: the ``fx-lsp`` script and ``python -m fx_lsp``, which start the CLI.
FRONT_DOOR = frozenset({"fx_lsp.__main__", "fx_lsp.launch"})
#: How many modules fx_lsp's top level may hold (issue 41): the front door and shared helpers.
FX_LSP_TOP_LEVEL_MOST = 10
#: The host's modules that run in the zygote, where workers are forked: they import the worker.
ZYGOTE_MODULES = frozenset({"fxcore.host.zygote", "fxcore.host.preload"})
#: fxcore's top level holds rooms only.
TOP_LEVEL = frozenset({"fxcore"})


def room_of(module: str) -> str:
    """``fxcore.host.engine`` -> ``host``; ``fx_lsp.server.session`` -> ``fx_lsp.server``;
    fx_lsp's top-level modules -> ``fx_lsp``, but for a room's own package (``fx_lsp.server``)."""
    parts = module.split(".")
    if parts[0] == "fx_lsp":
        if len(parts) == 2 and module in MAY_IMPORT:
            return module
        return "fx_lsp" if len(parts) <= 2 else f"fx_lsp.{parts[1]}"
    return parts[1] if len(parts) > 1 else "fxcore"


MODULES = module_files(ROOT)


def test_fxcore_top_level_holds_rooms_only() -> None:
    loose = sorted(name for name in MODULES
                   if name.startswith("fxcore.") and name.count(".") == 1
                   and MODULES[name].name != "__init__.py")
    assert loose == []
    rooms = {room_of(name) for name in MODULES} - {"fxcore"}
    assert rooms == set(MAY_IMPORT)


def test_fx_lsp_top_level_is_a_front_door_and_shared_helpers() -> None:
    top = sorted(name for name in MODULES if name.startswith("fx_lsp.")
                 and room_of(name) == "fx_lsp" and MODULES[name].name != "__init__.py")
    assert len(top) <= FX_LSP_TOP_LEVEL_MOST, top


@pytest.mark.parametrize("module", sorted(MODULES))
def test_a_module_imports_its_own_room_and_the_rooms_below(module: str) -> None:
    room = room_of(module)
    allowed = MAY_IMPORT.get(room, frozenset()) | {room}
    if module in ZYGOTE_MODULES:
        allowed = allowed | {"worker"}
    if module in FRONT_DOOR:
        allowed = allowed | {"fx_lsp.cli"}
    wrong = sorted(imported for imported in imported_modules(module, MODULES[module], set(MODULES))
                   if room_of(imported) not in allowed | TOP_LEVEL)
    assert wrong == [], f"{module} ({room}) imports {wrong}"


#: torch.fx's capture API: tracing is the fx capture's job (issue 33: the worker stays
#: mode-agnostic). ``torch.fx`` graphs (Graph, GraphModule, Node) are shared data and may be
#: read anywhere in the worker.
FX_CAPTURE_API = ("symbolic_trace", "fx.Tracer", "fx.Proxy", "FxCapture", "RecoveringTracer")
#: Outside the fx capture's folder, the registry of capture modes names each mode's class.
FX_CAPTURE_NAMED_BY = frozenset({"fxcore.worker.capture.modes"})


@pytest.mark.parametrize("module", sorted(name for name in MODULES
                                          if name.startswith("fxcore.worker.")))
def test_the_fx_capture_api_is_used_in_its_folder_only(module: str) -> None:
    if module.startswith("fxcore.worker.capture.fx.") or module in FX_CAPTURE_NAMED_BY:
        return
    text = MODULES[module].read_text(encoding="utf-8")
    used = [name for name in FX_CAPTURE_API if name in text]
    assert used == [], f"{module} uses torch.fx's capture API {used}"
