"""Real torch on the CPU for the classes of an ``fx-lsp check --mode export,compile`` report:
each class rebuilt from the JSON's ``"arguments"`` on the CPU with its own random weights
(``plain_fx_check.rebuilt_instance``: no pretrained weights, which no worker loads either),
real tensors of the JSON's ``"inputs"`` (``torch.ones``, as fx-lsp's compile capture and
``tests/thirdparty/compile_ground_truth.py`` make them, so both runs take the same
data-dependent branches), then, each on a fresh instance (seed 0):

- ``eager``: the module called on them, as written (``None``, or the error as
  ``ground_truth.analyse_exception`` reads it: its innermost frame in the library or a
  third-party package); for a class fx-lsp says raises on every input tried (FX408/FX509,
  whose report's ``inputs`` are the first input tried), the error it must raise at the
  same line (``verdicts_apart.judge_raised``);
- ``export``: ``torch.export.export(model, (), inputs, strict=False)``: ``{"verdict": "ok"}``
  or ``"failed"`` with the same reading;
- ``compile``: ``torch.compile`` with a recording backend, its graph breaks read from torch's
  own ``graph_breaks`` log (``compile_ground_truth.compile_once``): a row per ``nn.Module``
  mode fx-lsp compiled the class in (``compiled_modes`` of the request's ``compile``
  module, train as built without one), each with its ``module_mode``.

Export runs in the mode fx-lsp exported in (the export module's ``module_modes``); the eager
call in export's mode too (in the request's module's first mode). A request with
``"eager_only": true`` (``false_errors.py``: a compile row judged on other arguments or inputs
than export's) gets the eager call alone.

One child process per request (``real_outcomes``): user code never runs in the benchmark's
own process, and each file's classes start from a fresh torch, as fx-lsp's workers do. With
``device="cuda"`` (the GPU benchmarks, on a GPU machine) each instance is moved to the GPU and
the tensors are made there: the classes as a user runs them on a GPU.

    python3 -m benchmarks.fidelity.pt2_real_check --child < REQUEST.json
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from typing import Any

from benchmarks.paths import THIRDPARTY, child_environment
from fx_lsp.cli.output_formats.json_report import parse_report


def real_outcomes(root: str, classes: list[dict[str, Any]], timeout: float = 900.0,
                  device: str = "cpu") -> list[dict[str, Any]]:
    """For each ``{"module": <the export-mode JSON module>, "inputs": {name: spec}}`` (and
    optionally ``"compile": <the compile-mode JSON module>``), the real eager, export and
    compile outcomes on ``device`` (``{"build": error}`` when the instance cannot be rebuilt),
    in one child process run in ``root``."""
    environment = dict(child_environment(THIRDPARTY), HF_HUB_OFFLINE="1")
    completed = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--child"],
        input=json.dumps({"root": os.path.abspath(root), "classes": classes,
                          "device": device}),
        capture_output=True, text=True, timeout=timeout, cwd=root, env=environment,
        check=False)
    if completed.returncode != 0 or not completed.stdout.strip():
        raise RuntimeError(f"the real-torch child failed:\n{completed.stderr[-4000:]}")
    return parse_report(completed.stdout.splitlines()[-1])


def _child() -> None:
    import contextlib
    import io
    import warnings
    from pathlib import Path

    import torch
    from compile_ground_truth import compile_once, compiled_modes, example_tensors
    from ground_truth import analyse_exception

    from benchmarks.fidelity.plain_fx_check import rebuilt_instance
    from fxcore.host import sandbox
    from fxcore.workspace.config import load_config
    from fxcore.workspace.paths import import_location

    request = parse_report(sys.stdin.read())
    root, device = request["root"], request.get("device", "cpu")
    if device == "cpu":
        sandbox.enter(os.path.join(root, "pt2_real_check"), root)
    else:  # fx-lsp's sandbox hides the GPU: the corpus runs as Python runs it, in its folder
        os.chdir(root)
        sys.argv = [os.path.join(root, "pt2_real_check")]
    config, _ = load_config(root)
    sys.path[:0] = [root, os.path.join(root, "src")]
    # Not ``logging.disable``: the graph breaks are read from torch's own log.
    warnings.simplefilter("ignore")

    def error_of(error: BaseException) -> dict[str, Any]:
        found = analyse_exception(error, Path(root))
        found["text"] = str(error)[:4000]
        return found

    def fresh(module: dict[str, Any], mode: str = "train") -> torch.nn.Module:
        torch.manual_seed(0)
        model = rebuilt_instance(module, config, on_cpu=True).to(device)
        model.train(mode == "train")
        return model

    def tensors(specs: dict[str, str]) -> dict[str, Any]:
        return torch.utils._pytree.tree_map_only(
            torch.Tensor, lambda tensor: tensor.to(device), example_tensors(specs))

    outcomes = []
    for entry in request["classes"]:
        module, specs = entry["module"], entry["inputs"]
        # Literals a parent passes beside the tensors (``inputs.values``), as fx-lsp gave them.
        values = {name: ast.literal_eval(text) for name, text
                  in ((module.get("inputs") or {}).get("values") or {}).items()}
        location = import_location(os.path.join(root, module["path"])).sys_path_entry
        if location not in sys.path:
            sys.path.insert(0, location)
        try:
            fresh(module)
        except Exception as error:  # user code may raise anything
            outcomes.append({"build": error_of(error)})
            continue
        outcome: dict[str, Any] = {"eager": None, "export": {"verdict": "ok"}}
        exported_in = (module.get("module_modes") or ["train"])[0]
        # Models print; the outcome is what they raise.
        with contextlib.redirect_stdout(io.StringIO()):
            try:
                with torch.no_grad():
                    fresh(module, exported_in)(**tensors(specs), **values)
            except Exception as error:
                outcome["eager"] = error_of(error)
            if entry.get("eager_only"):
                outcomes.append({"eager": outcome["eager"]})
                continue
            try:
                torch.export.export(fresh(module, exported_in), (),
                                    {**tensors(specs), **values}, strict=False)
            except Exception as error:
                outcome["export"] = {"verdict": "failed", **error_of(error)}
            outcome["compile"] = [
                {**compile_once(fresh(module, mode), {**tensors(specs), **values}),
                 "module_mode": mode}
                for mode in compiled_modes(entry.get("compile") or {})]
        outcomes.append(outcome)
    sys.stdout.write("\n" + json.dumps(outcomes) + "\n")


if __name__ == "__main__":
    if sys.argv[1:] != ["--child"]:
        sys.stderr.write(__doc__ or "")
        sys.exit(2)
    _child()
