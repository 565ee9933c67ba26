"""Check fx-lsp's verdicts against plain ``torch.fx.symbolic_trace`` on the same instances.

Each class of a ``fx-lsp check --format json`` report is rebuilt from its ``"arguments"``
(for ``"from": "builder"``: the named builder function called with them; for ``"from":
"parent"``: the parent class, built from the parent's arguments, then
``get_submodule(path)``), traced with plain ``torch.fx.symbolic_trace``, and the outcome
compared: same status, and for failures the same first failure line (the innermost frame
inside the workspace). A class whose instance does not fit it (FX105, ``not-traced`` with that
failure) is traced too: plain torch.fx must stop on the same line. Where the trace on meta
stops at what only real data answers (a constant's value read: "Tensor.item() cannot be called
on meta tensors", ``fxcore.worker.meta.meta_limits``), the class is rebuilt on the CPU with
its own random initialisation and traced again: that is what a user's real torch.fx does. User
code runs only in a child process started for the purpose.

    python3 -m benchmarks.fidelity.plain_fx_check WORKSPACE REPORT.json   # prints disagreements

Used by tests (tests/fxcore/reporting/test_parent_arguments.py) and by corpus benchmarks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from benchmarks.paths import child_environment
from fx_lsp.cli.output_formats.json_report import parse_report, parse_report_file


def plain_verdicts(workspace_root: str, modules_json: list[dict[str, Any]],
                   cwd: str | None = None, timeout: float = 600.0) -> list[dict[str, Any]]:
    """Plain-FX outcomes for report modules, in one child process.

    Relative paths in the report are taken relative to ``cwd`` (the folder the CLI ran in;
    the workspace root by default). Each outcome is ``{"status": "traceable" | "failed" |
    "build-failed" | "not-traced", "path", "line", "error"}``."""
    request = {"root": os.path.abspath(workspace_root),
               "cwd": os.path.abspath(cwd or workspace_root), "modules": modules_json}
    environment = child_environment()
    completed = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--child"],
        input=json.dumps(request), capture_output=True, text=True, timeout=timeout,
        cwd=request["root"], env=environment, check=False,
    )
    if completed.returncode != 0:
        raise RuntimeError(f"the plain torch.fx child failed:\n{completed.stderr}")
    return parse_report(completed.stdout.splitlines()[-1])


def plain_verdict(workspace_root: str, module_json: dict[str, Any],
                  cwd: str | None = None) -> dict[str, Any]:
    """One report module's plain-FX outcome (see ``plain_verdicts``)."""
    return plain_verdicts(workspace_root, [module_json], cwd)[0]


def does_not_fit(module_json: dict[str, Any]) -> bool:
    """A report module whose instance does not fit its class (FX105): traced, no verdict."""
    return module_json["status"] == "not-traced" and any(
        failure["kind"] == "does-not-fit" for failure in module_json["failures"])


def disagreement(module_json: dict[str, Any], plain: dict[str, Any],
                 cwd: str) -> str | None:
    """None when fx-lsp's verdict and plain torch.fx's agree, else what differs: an instance
    that does not fit agrees with plain torch.fx failing on the FX105's line."""
    status = "failed" if does_not_fit(module_json) else module_json["status"]
    if status == "not-traced" or plain["status"] == "not-traced":
        return None if status == plain["status"] else f"{status} vs plain {plain['status']}"
    first = module_json["failures"][0] if module_json["failures"] else None
    if first is not None and first["kind"] == "constructor":
        status = "build-failed"
    if status != plain["status"]:
        return f"{status} vs plain {plain['status']}: {plain.get('error')}"
    if status != "failed" or first is None:
        return None
    ours = (os.path.normpath(os.path.join(cwd, first["path"])), first["line"])
    theirs = (plain["path"], plain["line"])
    if ours == theirs:
        return None
    # fx-lsp puts a failure raised in a decorator's wrapper around forward on the decorated
    # `def forward`, naming the decorator (fxcore/worker/capture/fx/tracing.py); the wrapper's
    # line stays in the failure's call chain, and that is where plain torch.fx stops.
    if first["message"].startswith("In the decorator ") and any(
            (os.path.normpath(os.path.join(cwd, frame["path"])), frame["line"]) == theirs
            for frame in first.get("frames", [])):
        return None
    return f"first failure at {ours} vs plain {theirs}"


# -- the child -------------------------------------------------------------------------------


def rebuilt_instance(module: dict[str, Any], config: Any, on_cpu: bool = False) -> Any:
    """The instance a report module's verdict is on, rebuilt from its ``"arguments"``: the
    class (or the builder named) called with them, or the parent built from its own and then
    ``get_submodule(path)``; no arguments or ``"from": "config"``: the configuration's call.
    On meta (as fx-lsp builds it, on the CPU where meta fails), or ``on_cpu`` with its own
    random initialisation; pretrained weights are never loaded. The module's folder must be on
    ``sys.path``; runs user code, so only in a child process."""
    import importlib

    import torch

    from fxcore.worker.building.arguments import class_namespace
    from fxcore.worker.building.construction import resolve
    from fxcore.worker.building.weights import without_weights
    from fxcore.workspace.module_config import module_config_for

    def build(qualified_name: str, arguments: dict[str, Any] | None,
              origin: str | None) -> torch.nn.Module:
        module_name, _, class_name = qualified_name.partition(":")
        cls = getattr(importlib.import_module(module_name), class_name)
        if arguments is None or origin == "config":
            module_config = module_config_for(config, module_name, class_name)
            factory = resolve(module_config.factory) if module_config.factory else cls
            args, kwargs = module_config.args, module_config.kwargs
        else:
            # The names fx-lsp evaluates a call site with: the class's module, then its
            # packages (fxcore.worker.building.arguments.class_namespace).
            namespace = dict(class_namespace(cls))
            # "builder": the builder function named, called with the arguments given; a
            # "call-site" that called a classmethod of the class names it the same way.
            factory = resolve(arguments["builder"]) \
                if origin in ("builder", "call-site") and arguments.get("builder") else cls
            args = [eval(text, namespace) for text in arguments["args"]]
            kwargs = {key: eval(text, namespace) for key, text in arguments["kwargs"].items()}
        with without_weights():
            if on_cpu:
                return factory(*args, **kwargs)
            try:
                with torch.device("meta"):
                    return factory(*args, **kwargs)
            except Exception:
                return factory(*args, **kwargs)

    arguments = module.get("arguments")
    if arguments is not None and arguments["from"] == "parent":
        parent = build(arguments["parent"], arguments, arguments.get("parent_from"))
        return parent.get_submodule(arguments["path"])
    return build(module["qualified_name"], arguments, arguments["from"] if arguments else None)


def _child() -> None:
    from torch import fx

    from fxcore.host import sandbox
    from fxcore.worker.meta.meta_limits import needs_real_data
    from fxcore.worker.running.seeding import seed_generators
    from fxcore.worker.source.locate import (
        SourceIndex,
        innermost_workspace_frame,
        to_frame,
        traceback_positions,
    )
    from fxcore.workspace.config import load_config
    from fxcore.workspace.module_config import module_config_for
    from fxcore.workspace.paths import import_location

    request = parse_report(sys.stdin.read())
    root, cwd = request["root"], request["cwd"]
    # The same rules as fx-lsp's workers: no network, no weights downloaded.
    sandbox.enter(os.path.join(root, "plain_fx_check"), root)
    config, _ = load_config(root)
    sys.path[:0] = [root, os.path.join(root, "src")]

    outcomes = []
    for module in request["modules"]:
        if module["status"] == "not-traced" and not does_not_fit(module):
            outcomes.append({"status": "not-traced"})
            continue
        path = os.path.normpath(os.path.join(cwd, module["path"]))
        entry = import_location(path).sys_path_entry
        if entry not in sys.path:
            sys.path.insert(0, entry)
        # Seeded as fx-lsp's worker seeds, before the build and before the trace: a forward
        # that draws from `random` traces down the outcome fx-lsp's did (FX206).
        seed_generators()
        try:
            instance = rebuilt_instance(module, config)
        except Exception as error:
            outcomes.append({"status": "build-failed", "error": repr(error)})
            continue
        module_name, _, class_name = module["qualified_name"].partition(":")
        concrete_args = module_config_for(config, module_name, class_name).concrete_args
        seed_generators()
        try:
            try:
                fx.symbolic_trace(instance, concrete_args=concrete_args or None)
            except Exception as error:
                if needs_real_data(error) is None:
                    raise
                seed_generators()
                instance = rebuilt_instance(module, config, on_cpu=True)
                seed_generators()
                fx.symbolic_trace(instance, concrete_args=concrete_args or None)
        except Exception as error:
            frames = [to_frame(position, SourceIndex())
                      for position in traceback_positions(error.__traceback__)]
            here = innermost_workspace_frame(frames, root)
            outcomes.append({"status": "failed", "error": f"{type(error).__name__}: {error}",
                             "path": here.path if here else None,
                             "line": here.line if here else None})
            continue
        outcomes.append({"status": "traceable"})
    sys.stdout.write("\n" + json.dumps(outcomes) + "\n")


def main(argv: list[str]) -> int:
    if argv == ["--child"]:
        _child()
        return 0
    if len(argv) != 2:
        sys.stderr.write(__doc__ or "")
        return 2
    workspace, report_path = argv
    with open(report_path) as handle:
        modules = parse_report_file(handle)["modules"]
    cwd = os.getcwd()
    outcomes = plain_verdicts(workspace, modules, cwd=cwd)
    differing = 0
    for module, plain in zip(modules, outcomes, strict=True):
        problem = disagreement(module, plain, cwd)
        if problem is not None:
            differing += 1
            print(f"{module['qualified_name']}: {problem}")
    compared = sum(module["status"] != "not-traced" or does_not_fit(module)
                   for module in modules)
    print(f"{compared - differing}/{compared} verdicts agree with plain torch.fx")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
