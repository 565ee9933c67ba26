"""The onnx mode against real ``torch.onnx.export(..., dynamo=True)``: each class
of tests/corpus/onnx is checked by ``fx-lsp check --mode onnx`` (fake tensors, no weights)
and exported for real on the CPU with random weights and real inputs, in this test on the
installed torch. Same verdict; where real export stops at an operator, fx-lsp's first failure
names that operator at the line the exporter's node came from; where real export succeeds,
fx-lsp's ONNX node count is the real model's (before optimization), and the optimized model
loads and runs in ONNX Runtime with eager's outputs; a dynamic dimension the exporter fixes
is FX603. With ONNX the only mode asked, a class torch.export refuses gets its ONNX verdict
from that first step of the exporter: torch.export's failures at the line where real
``torch.onnx.export`` stops; with the export mode beside it, that mode alone says so.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import torch

from fxcore.model.tensor_spec import parse_spec
from fxcore.rules import BY_CODE

from engine_support import REPO_ROOT, onnx_exporter_or_skip

onnxruntime = pytest.importorskip("onnxruntime")
pytest.importorskip("onnxscript")

CORPUS = Path(__file__).parents[4] / "corpus" / "onnx"
#: A real export per class and a CLI run at three opsets: slow, and in the torch matrix a
#: heavy test (minutes a series), run on an edge series (each test on one); the series between
#: run the onnx mode's own matrix tests (tests/fxcore/worker/capture/onnx/test_onnx_mode.py).
pytestmark = [pytest.mark.slow, pytest.mark.matrix, pytest.mark.matrix_sweep]


#: The files checked at an opset other than the default: the opset-dependent operators, and
#: clean classes (whose node count follows the version conversion). The other files' answers
#: do not depend on the opset, and each real export costs seconds (slow and matrix tiers).
AT_EVERY_OPSET = ("onnx_opsets.py", "onnx_clean.py")
#: The files holding classes torch.export refuses.
EXPORT_STAGE_FILES = ("onnx_clean.py", "onnx_export_stage.py")


def corpus_workspace(tmp_path: Path, opset: int | None) -> Path:
    """The corpus (at a chosen opset, its AT_EVERY_OPSET files) with a pyproject.toml giving
    each class its inputs and dynamic dims."""
    # A class's time-out well above its seconds: these machines' cores are shared.
    lines = ["[project]", "name = 'corpus'", "", "[tool.fx-lsp]", 'modes = ["onnx"]',
             "timeout = 120", *([f"onnx-opset = {opset}"] if opset else []), ""]
    for path in sorted(CORPUS.glob("*.py")):
        if opset is not None and path.name not in AT_EVERY_OPSET:
            continue
        shutil.copy(path, tmp_path / path.name)
        module = importlib.import_module(path.stem)
        for name, inputs in module.EXAMPLE_INPUTS.items():
            lines.append(f'[tool.fx-lsp.modules."{path.stem}:{name}"]')
            lines.append("inputs = {" + ", ".join(f'{arg} = "{spec}"'
                                                  for arg, spec in inputs.items()) + "}")
            dims = getattr(module, "DYNAMIC", {}).get(name)
            if dims:
                lines.append("dynamic = {" + ", ".join(
                    f"{arg} = {{" + ", ".join(f'{dim} = "{dim_name}"'
                                              for dim, dim_name in axes.items()) + "}"
                    for arg, axes in dims.items()) + "}")
    (tmp_path / "pyproject.toml").write_text("\n".join(lines) + "\n")
    return tmp_path


def fx_lsp_verdicts(workspace: Path) -> dict[str, dict[str, Any]]:
    """Each class's verdict in the JSON report, its failures with their diagnostics'
    messages."""
    completed = subprocess.run(
        [sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--output-format", "json",
         "."], cwd=workspace, capture_output=True, text=True, timeout=900,
        env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)))
    assert completed.returncode in (0, 1), completed.stderr[-3000:]
    report = json.loads(completed.stdout)
    messages = {(diagnostic["path"], diagnostic["line"], diagnostic["code"]): diagnostic["message"]
                for diagnostic in report["diagnostics"]}
    for module in report["modules"]:
        for failure in module["failures"]:
            failure["message"] = messages[(failure["path"], failure["line"], failure["code"])]
    return {module["qualified_name"]: module for module in report["modules"]}


def _translated_node(error: BaseException) -> torch.fx.Node | None:
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


def _corpus_line(node: torch.fx.Node) -> int:
    lines = [int(line) for path, line in re.findall(r'File "([^"]+)", line (\d+)',
                                                     node.meta.get("stack_trace") or "")
             if Path(path).parent == CORPUS]
    return lines[-1]


def _innermost_corpus_line(error: BaseException) -> int | None:
    """The innermost corpus line in the tracebacks of the error and the errors it was raised
    from (torch.onnx's ``TorchExportError`` is raised from torch.export's)."""
    lines: list[int] = []
    current: BaseException | None = error
    while current is not None:
        traceback = current.__traceback__
        while traceback is not None:
            if Path(traceback.tb_frame.f_code.co_filename).parent == CORPUS:
                lines.append(traceback.tb_lineno)
            traceback = traceback.tb_next
        current = current.__cause__
    return lines[-1] if lines else None


def real_onnx_export(module_name: str, name: str, opset: int | None) -> dict[str, Any]:
    """What real ``torch.onnx.export(dynamo=True)`` does with the class, on real weights."""
    from torch.onnx._internal.exporter import _errors

    module = importlib.import_module(module_name)
    torch.manual_seed(0)
    model = getattr(module, name)().eval()
    inputs = {arg: torch.randn(parse_spec(spec).shape)
              for arg, spec in module.EXAMPLE_INPUTS[name].items()}
    dims = getattr(module, "DYNAMIC", {}).get(name)
    dynamic_shapes = {arg: {dim: torch.export.Dim(dim_name) for dim, dim_name in axes.items()}
                      for arg, axes in dims.items()} if dims else None
    try:
        program = torch.onnx.export(model, (), kwargs=inputs, dynamo=True, verbose=False,
                                    optimize=False, dynamic_shapes=dynamic_shapes,
                                    **({"opset_version": opset} if opset else {}))
    except _errors.TorchExportError as error:
        return {"verdict": "export fails", "line": _innermost_corpus_line(error)}
    except _errors.ConversionError as error:
        node = _translated_node(error)
        assert node is not None, error
        return {"verdict": "failed", "operator": str(node.target), "line": _corpus_line(node)}
    node_count = len(program.model.graph)
    graph_inputs = {value.name: value for value in program.model.graph.inputs}
    fixed = [arg for arg, axes in (dims or {}).items() for dim in axes
             if isinstance(graph_inputs[arg].shape[dim], int)]
    program.optimize()  # as torch.onnx.export(optimize=True), its default, leaves it
    session = onnxruntime.InferenceSession(program.model_proto.SerializeToString())
    feeds = {given.name: inputs[given.name].numpy() for given in session.get_inputs()}
    outputs = session.run(None, feeds)
    with torch.no_grad():
        expected = model(**inputs)
    assert torch.allclose(torch.from_numpy(outputs[0]), expected, atol=1e-4), name
    return {"verdict": "specialized"} if fixed else {"verdict": "passes", "nodes": node_count}


def fx_lsp_verdict(module: dict[str, Any]) -> dict[str, Any]:
    failures = module["failures"]
    if module["status"] == "not-traced":
        return {"verdict": "not checked", "reason": module["reason"]}
    if failures and BY_CODE[failures[0]["code"]].mode == "export":
        # torch.export's own failures, as the ONNX verdict: the exporter's first step.
        assert module["status"] == "failed", module
        assert any("exports with torch.export first, which fails here" in note
                   for note in module["capture_notes"]), module["capture_notes"]
        return {"verdict": "export fails", "line": failures[0]["line"]}
    if failures and all(failure["code"] == "FX603" for failure in failures):
        return {"verdict": "specialized"}
    if failures:
        first = failures[0]
        operator = re.match(r"`([^`]+)`", first["message"])
        assert operator is not None, first["message"]
        return {"verdict": "failed", "operator": operator.group(1), "line": first["line"]}
    counts = [int(found) for note in module["capture_notes"]
              for found in re.findall(r"The ONNX model has (\d+) nodes", note)]
    return {"verdict": "passes", "nodes": counts[0] if counts else None}


@pytest.mark.parametrize("opset", [None, 18, 23], ids=["default-opset", "opset18", "opset23"])
def test_the_corpus_agrees_with_real_onnx_export(tmp_path: Path, opset: int | None) -> None:
    onnx_exporter_or_skip()
    sys.path.insert(0, str(CORPUS))
    try:
        verdicts = fx_lsp_verdicts(corpus_workspace(tmp_path, opset))
        real = {key: real_onnx_export(*key.split(":"), opset) for key in verdicts}
    finally:
        sys.path.remove(str(CORPUS))
    ours = {key: fx_lsp_verdict(module) for key, module in verdicts.items()}
    assert ours == real
    # Every kind of class the corpus is for is in it; at another opset, models whose node
    # counts are compared.
    kinds = {answer["verdict"] for answer in real.values()}
    if opset is None:
        assert kinds == {"passes", "failed", "export fails", "specialized"}
    else:
        assert "passes" in kinds


def test_with_the_export_mode_an_export_failure_is_said_once(tmp_path: Path) -> None:
    """``modes = ["export", "onnx"]``: the classes torch.export refuses fail in the export
    mode, at real ``torch.onnx.export``'s line, and the onnx mode only points there."""
    onnx_exporter_or_skip()
    sys.path.insert(0, str(CORPUS))
    try:
        workspace = corpus_workspace(tmp_path, None)
        for path in CORPUS.glob("*.py"):
            if path.name not in EXPORT_STAGE_FILES:
                (workspace / path.name).unlink()
        pyproject = workspace / "pyproject.toml"
        pyproject.write_text(pyproject.read_text().replace(
            'modes = ["onnx"]', 'modes = ["export", "onnx"]'))
        completed = subprocess.run(
            [sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--output-format", "json",
             "."], cwd=workspace, capture_output=True, text=True, timeout=900,
            env=dict(os.environ, PYTHONPATH=str(REPO_ROOT)))
        assert completed.returncode in (0, 1), completed.stderr[-3000:]
        report = json.loads(completed.stdout)
        modules = {(module["qualified_name"], module["mode"]): module
                   for module in report["modules"]}
        refused = {key: real_onnx_export(*key.split(":"), None)
                   for key, mode in modules if mode == "export"}
    finally:
        sys.path.remove(str(CORPUS))
    refused = {key: answer["line"] for key, answer in refused.items()
               if answer["verdict"] == "export fails"}
    assert len(refused) >= 3, refused
    said = [(diagnostic["path"], diagnostic["line"], diagnostic["code"], diagnostic["message"])
            for diagnostic in report["diagnostics"]]
    assert len(said) == len(set(said)), said
    for key, line in refused.items():
        export, onnx = modules[key, "export"], modules[key, "onnx"]
        assert export["status"] == "failed" and export["failures"][0]["line"] == line, export
        assert onnx["status"] == "not-traced" and onnx["failures"] == [], onnx
        assert f"--mode export: {export['failures'][0]['code']} at line {line}" \
            in onnx["reason"], onnx["reason"]
    where = {(key.split(":")[0] + ".py", line) for key, line in refused.items()}
    assert all(diagnostic["mode"] == "export" for diagnostic in report["diagnostics"]
               if (diagnostic["path"], diagnostic["line"]) in where), report["diagnostics"]
