"""Shapes of real torchvision, timm and transformers models: what fx-lsp propagated on meta
tensors equals, node by node, what running the model on CPU with real tensors of the same
input shapes gives. Where the real run fails on those inputs (an inferred image size a model
does not accept), fx-lsp must have said so with an FX300, and the shapes before agree."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

pytestmark = pytest.mark.thirdparty


def test_propagated_shapes_equal_a_real_run(thirdparty_runs: tuple[dict, dict]) -> None:
    _, report = thirdparty_runs
    shaped = [m for m in report["modules"] if m["status"] == "traceable" and m["inputs"]]
    requests = [{"module": m["qualified_name"].split(":")[0], "class": m["class"],
                 "inputs": m["inputs"]["tensors"]} for m in shaped]
    completed = subprocess.run([sys.executable, str(HERE / "real_shapes.py")],
                               input=json.dumps(requests), capture_output=True, text=True,
                               timeout=1500, cwd=HERE)
    assert completed.returncode == 0, completed.stderr[-3000:]
    real = json.loads(completed.stdout)
    compared, differences, explained = 0, [], []
    for module in shaped:
        run = real[module["qualified_name"]]
        if run["error"] is not None:
            if not module["shape_errors"]:
                differences.append((module["class"], "ran into", run["error"]))
            explained.append(module["class"])
        else:
            compared += 1
        for node in module["nodes"]:
            ran = node["name"] in run["shapes"] or run["error"] is None
            if node["shape"] is not None and ran \
                    and run["shapes"].get(node["name"]) != node["shape"]:
                differences.append((module["class"], node["name"], node["shape"],
                                    run["shapes"].get(node["name"])))
    assert not differences, differences
    # The sample's ten shaped classes (conftest.SAMPLE_FILES): segmentation, video, decorated.
    assert compared >= 8, f"only {compared} real models ran ({explained} did not)"
