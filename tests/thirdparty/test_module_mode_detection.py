"""A torchvision detection model left in train mode, as built, and called as for inference
(``tpmodels/tv_detection_as_built.py``: Faster R-CNN, no weights): in train mode torchvision
asks for the targets fx-lsp cannot make ("targets should not be none when in training mode"),
so export and compile judge it in eval mode, compile saying why in a note, where both were
"not checkable" before. Each verdict is compared with real torch on the CPU in eval mode, on
the inputs fx-lsp decided (``export_ground_truth.py``, ``compile_ground_truth.py``, as the
fidelity tests do).

On a machine whose torchvision operators cannot load (the CUDA wheel beside the CPU torch:
``_shim``), real torch stops at ``torchvision::nms`` as fx-lsp does, after the same breaks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from compile_agreement import compare as compare_compile
from conftest import missing_libraries
from export_compare import compare as compare_export

from fx_lsp.cli.output_formats.json_report import parse_report

HERE = Path(__file__).resolve().parent
FILE = HERE / "workspace" / "tpmodels" / "tv_detection_as_built.py"
OFFLINE = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
RUN_TIMEOUT = 900



def _torchvision_ops_load() -> bool:
    """Whether torchvision's compiled operators run here (``nms`` has a CPU kernel). A plain
    import: where they cannot load (the CUDA wheel beside the CPU torch), it fails or leaves
    ``nms`` without a kernel."""
    import importlib

    import torch

    try:
        importlib.import_module("torchvision")
        return bool(torch._C._dispatch_has_kernel_for_dispatch_key("torchvision::nms", "CPU"))
    except (ImportError, RuntimeError, OSError):
        return False


# Where torchvision's operators cannot load (its CUDA wheel beside the CPU torch), fx-lsp's
# search, which stands in values on meta (``nonzero`` assumes every box kept), runs the model
# on to ``torchvision::nms`` and stops there on every input tried: the class gets no inputs.
# Seen after the everyday-code and module-mode work met; judged where the operators load.
pytestmark = [pytest.mark.thirdparty,
              pytest.mark.skipif(not _torchvision_ops_load(),
                                 reason="torchvision's C++ operators do not load here")]


def _run(argv: list[str], cwd: Path) -> str:
    completed = subprocess.run(argv, cwd=cwd, env=OFFLINE, capture_output=True, text=True,
                               timeout=RUN_TIMEOUT, check=False)
    assert completed.returncode in (0, 1), f"{argv} exited {completed.returncode}:\n" \
                                           f"{completed.stderr[-3000:]}"
    return completed.stdout


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """fx-lsp's export and compile verdicts of the class, by mode (paths absolute: run from
    a folder outside the workspace)."""
    missing = missing_libraries()
    if missing:
        pytest.skip(f"not installed: {', '.join(missing)} (run scripts/install-thirdparty.sh)")
    folder = tmp_path_factory.mktemp("detection-modes")
    report = parse_report(_run([sys.executable, "-m", "fx_lsp", "check", "--no-cache",
                                "--mode", "export,compile", "--output-format", "json",
                                str(FILE)], folder))
    return {module["mode"]: module for module in report["modules"]}


def _real(script: str, modules: list[dict[str, Any]], folder: Path) -> dict[str, Any]:
    """A ground-truth script's rows for ``modules`` (a report of them alone)."""
    report = folder / "report.json"
    report.write_text(json.dumps({"modules": modules}), encoding="utf-8")
    out = folder / "truth.json"
    if script == "compile_ground_truth.py":
        _run([sys.executable, str(HERE / script), "--report", str(report), "--out", str(out)],
             HERE)
        return json.loads(out.read_text(encoding="utf-8"))
    return parse_report(_run([sys.executable, str(HERE / script), str(report)], HERE))


def test_export_judges_it_in_eval_mode_as_real_export_does(
        verdicts: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    module = verdicts["export"]
    assert module["status"] != "not-traced", module["reason"]
    assert module["module_modes"] == ["eval"]
    (truth,) = _real("export_ground_truth.py", [module], tmp_path)["modules"]
    row = compare_export(module, truth)
    assert row.agree, f"{row.why}; real torch.export: {row.real}; fx-lsp: {row.fx_lsp}"


def test_compile_judges_it_in_eval_mode_with_a_note_as_real_compile_does(
        verdicts: dict[str, dict[str, Any]], tmp_path: Path) -> None:
    module = verdicts["compile"]
    assert module["status"] != "not-traced", module["reason"]
    assert module["module_modes"] == ["eval"]
    (note,) = [note for note in module["capture_notes"] if "train mode" in note]
    assert note.startswith("Judged in eval mode only: in train mode (model.train()) it could "
                           "not be checked:")
    assert "targets should not be none when in training mode" in note
    (truth,) = _real("compile_ground_truth.py", [module], tmp_path)["modules"]
    assert truth["module_mode"] == "eval"
    row = compare_compile(truth, module)
    assert row.agrees and row.exact, (f"real {row.real_verdict} {row.real} {row.real_error}; "
                                      f"fx-lsp {row.lsp_verdict} {row.lsp} {row.lsp_error}")
    # Not the number of graphs: how often dynamo compiles the box pooler's loop over levels
    # again is the data's (``torch.where(levels == level)``: real weights give each level
    # its own number of boxes, a recompile, 22 graphs in torch 2.14; on meta every box is at
    # every level, 21); every break above is the same.
    assert abs(row.lsp_graphs - row.real_graphs) <= 1, (row.lsp_graphs, row.real_graphs)
