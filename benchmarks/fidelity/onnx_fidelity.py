"""The onnx mode on real third-party models: fx-lsp's onnx verdict (fake tensors,
through ``fx-lsp check --mode onnx``) against real ``torch.onnx.export(..., dynamo=True)`` on
the CPU with random weights and real tensors of the same input specs, for the wrapper classes
of the given files of ``tests/thirdparty/workspace`` (torchvision, timm, transformers), with
each side's seconds.

    python3 -m benchmarks run fidelity onnx_fidelity -- tpmodels/hf_models.py ...

A class agrees when both pass, or both fail at the same operator (fx-lsp's first failure
names the operator the real exporter stopped at), or torch.export fails on both sides (fx-lsp's
onnx verdict, with the onnx mode alone, is then torch.export's failures). Printed, never
asserted.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import re
import sys
import time
import warnings
from typing import Any

from benchmarks.paths import use_thirdparty_helpers
from benchmarks.provenance import machine_line
from benchmarks.tables import emit, markdown
from fxcore.rules import BY_CODE

use_thirdparty_helpers()

from export_compare import HERE, WORKSPACE, _run  # noqa: E402
from export_ground_truth import real_inputs  # noqa: E402


def fx_lsp_side(files: list[str]) -> tuple[dict[str, Any], float]:
    started = time.perf_counter()
    text = _run([sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--mode", "onnx",
                 "--output-format", "json", *[str(WORKSPACE / file) for file in files]],
                ok=(0, 1))
    return json.loads(text), time.perf_counter() - started


def _verdict(module: dict[str, Any], messages: dict[tuple[str, int, str], str]) -> str:
    if module["status"] == "not-traced":
        return "export fails" if "torch.export first" in (module["reason"] or "") else \
            f"not checked: {(module['reason'] or '')[:50]}"
    if not module["failures"]:
        return "ok"
    first = module["failures"][0]
    rule = BY_CODE.get(first["code"])
    if rule is not None and rule.mode == "export":
        return "export fails"
    found = re.match(r"`([^`]+)`", messages.get((first["path"], first["line"], first["code"]),
                                                 ""))
    return f"{first['code']} {found.group(1) if found else ''}".strip()


def _translated_node(error: BaseException) -> Any:
    """The node the real exporter was translating when it raised (its own frame's local)."""
    current: BaseException | None = error
    while current is not None:
        traceback = current.__traceback__
        while traceback is not None:
            if traceback.tb_frame.f_code.co_name == "_translate_fx_graph":
                return traceback.tb_frame.f_locals.get("node")
            traceback = traceback.tb_next
        current = current.__cause__
    return None


def real_side(module_name: str, class_name: str, specs: dict[str, str]) -> tuple[str, float]:
    """Real torch.onnx.export's verdict (``ok``, the operator it stopped at, or ``export
    fails``) and its seconds, the model in eval mode."""
    import torch
    from torch.onnx._internal.exporter import _errors

    torch.manual_seed(0)
    model = getattr(importlib.import_module(module_name), class_name)().eval()
    started = time.perf_counter()
    try:
        torch.onnx.export(model, (), kwargs=real_inputs(specs), dynamo=True, verbose=False)
    except _errors.TorchExportError:
        verdict = "export fails"
    except _errors.ConversionError as error:
        node = _translated_node(error)
        verdict = f"fails {node.target if node is not None else type(error).__name__}"
    except Exception as error:
        verdict = f"error {type(error).__name__}"
    else:
        verdict = "ok"
    return verdict, time.perf_counter() - started


def agrees(mine: str, real: str) -> bool:
    if mine == real or (mine.startswith("export fails") and real == "export fails"):
        return True
    operator = real.removeprefix("fails ")
    return real.startswith("fails") and mine.startswith("FX60") and mine.endswith(operator)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", help="files of tests/thirdparty/workspace")
    options = parser.parse_args(argv)
    report, fx_seconds = fx_lsp_side(options.files)
    messages = {(d["path"], d["line"], d["code"]): d["message"] for d in report["diagnostics"]}
    sys.path[:0] = [str(WORKSPACE), str(HERE)]
    importlib.import_module("tpmodels")  # the shim and the offline variables first
    logging.disable(logging.CRITICAL)
    warnings.simplefilter("ignore")
    rows, real_seconds = [], 0.0
    for module in report["modules"]:
        if module["inputs"] is None:
            continue
        mine = _verdict(module, messages)
        real, seconds = real_side(module["qualified_name"].split(":")[0], module["class"],
                                  module["inputs"]["tensors"])
        real_seconds += seconds
        rows.append([module["class"], real, mine, "yes" if agrees(mine, real) else "NO",
                     f"{seconds:.1f}", f"{module['trace_seconds'] or 0:.1f}"])
    agreed = sum(row[3] == "yes" for row in rows)
    emit("onnx_fidelity", markdown(["class", "real torch.onnx.export", "fx-lsp onnx", "agree",
                                    "real s", "fx-lsp s"], rows)
         + f"\n\n{agreed}/{len(rows)} agree; fx-lsp check {fx_seconds:.0f} s for the files "
         f"(import and export included), real exports {real_seconds:.0f} s.\n{machine_line()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
