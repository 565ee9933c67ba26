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

Inside the worker, its folders import in one direction too: the stages a class goes through
(building, inputs, capture, graph) each import only the stages before it, the room below
them that they share, the device views and the ``nn.Module`` mode switch; the pipeline on top
leads the class through them (``WORKER_MAY_IMPORT``).
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
#: How many modules fx_lsp's top level may hold: the front door and shared helpers; the rest
#: lives in its packages (cli, server, mcp_server, features), each a room of one job.
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


#: torch.fx's capture API: tracing is the fx capture's job, so that the rest of the worker
#: serves every capture mode alike. ``torch.fx`` graphs (Graph, GraphModule, Node) are shared
#: data and may be read anywhere in the worker.
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


#: The rooms below the worker's stages, bottom up, each one job: running user code (budgets,
#: time limits, seeds) and reading it (imports, source locations) side by side, what the stages
#: of a job hand one another on them, and tensors without data on top.
BELOW_STAGES: dict[str, frozenset[str]] = {
    "running": frozenset(),
    "source": frozenset(),
    "job": frozenset({"running", "source"}),
    "meta": frozenset({"running", "source", "job"}),
}
UNDER = frozenset(BELOW_STAGES)
#: The worker's folders (``fxcore/worker/``), bottom up, and the folders each may import
#: besides its own: the rooms below the stages, the device views and the ``nn.Module`` mode
#: switch beside each other on them, then the stages in the order a class goes through them
#: (built, its example inputs decided, captured, its graph read), then the pipeline that leads
#: each class through them. A stage imports only the stages before it.
WORKER_MAY_IMPORT: dict[str, frozenset[str]] = {
    **BELOW_STAGES,
    "devices": UNDER,
    "module_modes": UNDER,
    "building": UNDER | {"devices", "module_modes"},
    "inputs": UNDER | {"devices", "module_modes", "building"},
    "capture": UNDER | {"devices", "module_modes", "building", "inputs"},
    "graph": UNDER | {"devices", "module_modes", "building", "inputs", "capture"},
    "pipeline": UNDER | {"devices", "module_modes", "building", "inputs", "capture", "graph"},
}
#: The capture modes whose folders (``capture/<mode>/``) may import another mode's: onnx
#: translates the very program the export mode exported (it exports first where export has
#: not run), and compile's plan of ``.item()`` values runs ``forward`` as non-strict export
#: runs it, on export's fake tensors and its guesser of data-dependent guards. No mode imports
#: onnx's, compile's or fx's folder; only the registry of modes (``capture.modes``) names
#: every mode.
CAPTURE_MODE_MAY_IMPORT: dict[str, frozenset[str]] = {
    "onnx": frozenset({"export"}),
    "compile": frozenset({"export"}),
}
#: The capture's own module that names every mode, its registry.
CAPTURE_REGISTRY = "fxcore.worker.capture.modes"
WORKER_MODULES = sorted(name for name in MODULES if name.startswith("fxcore.worker."))


def worker_folder_of(module: str) -> str:
    """``fxcore.worker.inputs.from_layers.sizes`` -> ``inputs``; a module at the worker's top level
    -> its own name."""
    return module.split(".")[2]


def capture_mode_of(module: str) -> str | None:
    """``fxcore.worker.capture.onnx.operators`` -> ``onnx``; None for the capture's own shared
    modules (``capture.base``, ``capture.modes``) and modules outside the capture."""
    parts = module.split(".")
    if parts[:3] != ["fxcore", "worker", "capture"] or len(parts) < 5:
        return None
    return parts[3]


#: Names of a folder with no one job: a module belongs to the room of what it is for.
CATCH_ALL_NAMES = frozenset({"shared", "common", "utils", "util", "misc", "helpers", "lib"})


def test_no_worker_room_is_a_catch_all() -> None:
    assert not set(WORKER_MAY_IMPORT) & CATCH_ALL_NAMES


def test_the_worker_top_level_holds_its_folders_only() -> None:
    loose = sorted(name for name in WORKER_MODULES if name.count(".") == 2
                   and MODULES[name].name != "__init__.py")
    assert loose == []
    assert {worker_folder_of(name) for name in WORKER_MODULES} == set(WORKER_MAY_IMPORT)


@pytest.mark.parametrize("module", WORKER_MODULES)
def test_a_worker_stage_imports_the_stages_before_it(module: str) -> None:
    folder = worker_folder_of(module)
    allowed = WORKER_MAY_IMPORT.get(folder, frozenset()) | {folder}
    imported = sorted(name for name in imported_modules(module, MODULES[module], set(MODULES))
                      if name.startswith("fxcore.worker."))
    wrong = [name for name in imported if worker_folder_of(name) not in allowed]
    assert wrong == [], f"{module} ({folder}) imports {wrong}"


@pytest.mark.parametrize("module", sorted(name for name in WORKER_MODULES
                                          if name.startswith("fxcore.worker.capture.")))
def test_a_capture_mode_imports_no_other_mode_but_export(module: str) -> None:
    mode = capture_mode_of(module)
    if module == CAPTURE_REGISTRY:
        return
    allowed = CAPTURE_MODE_MAY_IMPORT.get(mode, frozenset()) | ({mode} if mode else set())
    wrong = sorted(name for name in imported_modules(module, MODULES[module], set(MODULES))
                   if capture_mode_of(name) not in allowed | {None})
    assert wrong == [], f"{module} (mode {mode or 'none'}) imports {wrong}"
