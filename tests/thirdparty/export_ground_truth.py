"""Ground truth of the third-party export fidelity: what REAL ``torch.export`` does on the CPU.

For each class of fx-lsp's export report (``export_check.py``'s JSON, or ``fx-lsp check --mode
export --format json``) that has example inputs, build the wrapper on the CPU with real
(random) weights, make real tensors of the very input specs fx-lsp decided for it, and run
``torch.export.export(model, (), inputs, strict=False)``. Record:

- ``verdict``: ``ok`` or ``failed`` (``build-error`` when the constructor raises);
- ``exception`` (type name) and ``message`` (first line);
- ``innermost_frame``: the first line the comparison uses, the innermost frame of the
  traceback in the workspace or a third-party library (not torch, not the standard library),
  as ``ground_truth.analyse_exception`` finds it for plain torch.fx. Non-strict export runs
  the model's Python live, so this is the line of the model that failed; fx-lsp must have it
  in its first failure's call chain (``frames``), as the fx fidelity test checks the innermost
  third-party frame. ``workspace_frame`` and ``third_party_frame`` are recorded too.

Classes without example inputs are not run: fx-lsp did not check them either.

Each model is exported in the ``nn.Module`` mode fx-lsp's verdict was made in (its JSON's
``module_modes``: eval mode under ``module-mode = "auto"``, as deployment runs it).

Usage: ``python export_ground_truth.py REPORT.json [--out FILE]`` (stdout by default). It runs
the models, so it runs in a subprocess of the test or benchmark, never in fx-lsp.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
import time
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
WORKSPACE = HERE / "workspace"


def real_inputs(specs: dict[str, str]) -> dict[str, Any]:
    """A real tensor per spec: normal floats, small non-negative integers (valid token ids)."""
    import torch

    from fxcore.model.tensor_spec import parse_spec

    inputs = {}
    for name, text in specs.items():
        spec = parse_spec(text)
        dtype = getattr(torch, spec.dtype)
        inputs[name] = (torch.randn(spec.shape, dtype=dtype) if dtype.is_floating_point
                        else torch.randint(0, 10, spec.shape, dtype=dtype))
    return inputs


def real_export(module_name: str, class_name: str, specs: dict[str, str],
                mode: str = "eval") -> dict[str, Any]:
    """Verdict and first line of real non-strict torch.export of one class on the CPU, the
    model in ``mode``."""
    import torch
    from ground_truth import analyse_exception

    torch.manual_seed(0)
    started = time.perf_counter()
    try:
        model = getattr(importlib.import_module(module_name), class_name)()
    except Exception as error:
        return {"verdict": "build-error", **analyse_exception(error, WORKSPACE)}
    model.train(mode == "train")
    try:
        torch.export.export(model, (), real_inputs(specs), strict=False)
    except Exception as error:
        row = {"verdict": "failed", **analyse_exception(error, WORKSPACE)}
    else:
        row = {"verdict": "ok"}
    row["seconds"] = round(time.perf_counter() - started, 3)
    return row


def collect(report: dict[str, Any]) -> list[dict[str, Any]]:
    sys.path.insert(0, str(WORKSPACE))
    importlib.import_module("tpmodels")  # the shim and the offline variables first
    rows = []
    for module in report["modules"]:
        module_name = module["qualified_name"].split(":")[0]
        row = {"module": module_name, "class": module["class"], "inputs": None}
        if module["inputs"] is not None:
            row["inputs"] = module["inputs"]["tensors"]
            row.update(real_export(module_name, module["class"], row["inputs"],
                                   (module.get("module_modes") or ["train"])[0]))
        else:
            row["verdict"] = "no-inputs"
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report", type=Path, help="fx-lsp's export report (JSON)")
    parser.add_argument("--out", type=Path, default=None)
    options = parser.parse_args(argv)
    sys.path[:0] = [str(HERE), str(HERE.parents[1])]
    # torch.export logs its failures and prints partial graphs: the rows say it all.
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    rows = collect(json.loads(options.report.read_text(encoding="utf-8")))
    text = json.dumps({"modules": rows}, indent=1) + "\n"
    if options.out is None:
        sys.stdout.write(text)
    else:
        options.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
