"""The onnx mode's own pieces: ``onnx-opset`` in the configuration; without the
``fx-lsp[onnx]`` extra, one line saying what to install and the other modes running; and, in
this process, the capture of one corpus class finding its operator at its line (the corpus
against real ``torch.onnx.export`` is tests/fxcore/worker/capture/onnx/test_onnx_corpus.py,
slow)."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fxcore.model.capture_modes import available_modes
from fxcore.model.job_spec import EngineConfig, TraceJob
from fxcore.model.results import Failure
from fxcore.model.tensor_spec import parse_spec
from fxcore.workspace.config import parse_config

from engine_support import REPO_ROOT, onnx_exporter_or_skip

CORPUS = Path(__file__).parents[4] / "corpus" / "onnx"
#: Run first in a process (a ``sitecustomize``), it hides onnx and onnxscript as where they
#: are not installed.
BLOCKER = '''\
import site
import sys

HIDDEN = ("onnx", "onnxscript")


class _Hiding:
    """A site-packages directory's finder that does not see HIDDEN: find_spec answers None
    for them, as where they are not installed (torch itself asks)."""

    def __init__(self, finder):
        self.finder = finder

    def find_spec(self, name, target=None):
        if name.split(".")[0] in HIDDEN:
            return None
        return self.finder.find_spec(name, target)

    def invalidate_caches(self):
        self.finder.invalidate_caches()


HIDDEN_FROM = {}
for entry in site.getsitepackages():
    finder = sys.path_importer_cache.get(entry)
    if finder is None:
        for hook in sys.path_hooks:
            try:
                finder = hook(entry)
                break
            except ImportError:
                continue
    HIDDEN_FROM[entry] = finder
    sys.path_importer_cache[entry] = _Hiding(finder)


def restore():
    sys.path_importer_cache.update(HIDDEN_FROM)
'''
INSTALL_LINE = ("the onnx capture mode needs onnx and onnxscript, which are not installed: "
                "pip install 'fx-lsp[onnx]'; checked without it")


def test_onnx_opset_is_a_whole_number_of_an_opset() -> None:
    config, problems = parse_config({"onnx-opset": 23, "modes": ["onnx"]})
    assert (config.onnx_opset, problems) == (23, [])
    for wrong in ("23", 3, True):
        config, problems = parse_config({"onnx-opset": wrong})
        assert config.onnx_opset is None
        assert problems == ["[tool.fx-lsp]: 'onnx-opset' must be a whole number, an ONNX "
                            "opset of at least 7; ignored"]


@pytest.fixture
def onnx_not_installed(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    namespace: dict[str, Any] = {}
    exec(BLOCKER, namespace)  # the blocker the CLI test's process runs first
    for name in [name for name in sys.modules if name.split(".")[0] in ("onnx", "onnxscript")]:
        monkeypatch.delitem(sys.modules, name)
    # pytest puts the test folders on sys.path, this one among them once a test beside it ran
    # (tests/fxcore/worker/capture/ holds onnx/): a folder named onnx there would be found as
    # a namespace package where the real one is hidden.
    tests = str(Path(__file__).resolve().parents[4])
    monkeypatch.setattr(sys, "path", [entry for entry in sys.path
                                      if not os.path.abspath(entry).startswith(tests)])
    yield
    namespace["restore"]()


def test_without_the_extra_the_onnx_mode_is_left_out_with_one_line(
        onnx_not_installed: None) -> None:
    assert available_modes(("fx", "onnx")) == (("fx",), [INSTALL_LINE])
    assert available_modes(("onnx",)) == (("fx",), [INSTALL_LINE])
    config, problems = parse_config({"modes": ["export", "onnx"]})
    assert config.modes == ("export",)
    assert problems == [f"[tool.fx-lsp]: 'modes': {INSTALL_LINE}"]


@pytest.mark.slow
def test_without_the_extra_the_cli_says_what_to_install_once(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text(BLOCKER)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "pyproject.toml").write_text("[project]\nname = 'w'\n")
    (workspace / "models.py").write_text(
        "import torch\nfrom torch import nn\n\n\n"
        + "".join(f"class Net{index}(nn.Module):\n"
                  f"    def forward(self, x: torch.Tensor):\n"
                  f"        return x.relu() * {index}\n\n\n" for index in range(3)))
    completed = subprocess.run(
        [sys.executable, "-m", "fx_lsp", "check", "--no-cache", "--mode", "export,onnx",
         "--output-format", "json", "models.py"], cwd=workspace, capture_output=True,
        text=True, timeout=600,
        env=dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), str(REPO_ROOT)])))
    assert completed.returncode == 0, completed.stderr[-3000:]
    assert completed.stderr.count("pip install 'fx-lsp[onnx]'") == 1, completed.stderr
    modules = json.loads(completed.stdout)["modules"]
    assert {(module["class"], module["mode"], module["status"]) for module in modules} == {
        (f"Net{index}", "export", "traceable") for index in range(3)}


@pytest.mark.slow  # onnxscript's import, the registry and an export: over 5 s on 2 cores
@pytest.mark.matrix  # the exporter's private pieces, under every torch series
def test_an_operator_without_translation_is_at_its_line() -> None:
    pytest.importorskip("onnxscript")
    onnx_exporter_or_skip()
    from fxcore.worker.building.instances import Built, build_class
    from fxcore.worker.capture.onnx.converting import OnnxCapture
    from fxcore.worker.job.capture_target import CaptureTarget
    from fxcore.worker.job.inputs_decision import InputsDecision
    from fxcore.worker.job.job_context import JobContext
    from fxcore.workspace.discovery import top_level_classes

    path = CORPUS / "onnx_unsupported.py"
    sys.path.insert(0, str(CORPUS))
    try:
        module = importlib.import_module(path.stem)
    finally:
        sys.path.remove(str(CORPUS))
    context = JobContext(TraceJob(path=str(path), workspace_root=str(CORPUS),
                                  config=EngineConfig(modes=("onnx",))))
    source = top_level_classes(path.read_text(encoding="utf-8"))["TwoSpecials"]
    built = build_class(context, module.TwoSpecials, source)
    assert isinstance(built, Built)
    built.model.eval()
    target = CaptureTarget(module.TwoSpecials, source, built.model, built.instantiated_on)
    record = OnnxCapture().capture(context, target,
                                   InputsDecision({"x": parse_spec("float32[2, 4]")}))
    lines = path.read_text(encoding="utf-8").splitlines()
    assert [(failure.code, lines[failure.line - 1].strip()) for failure in record.failures] == [
        ("FX601", "b = torch.special.i1e(a)"),
        ("FX601", "return torch.special.bessel_j1(b) + a")]
    assert "`prims.bessel_i1e.default` has no ONNX translation (opset 20" in \
        record.failures[0].message
    assert record.graph_module is None and record.not_checked is None


@pytest.mark.slow  # onnxscript's import and three registries
@pytest.mark.matrix  # the exporter's registries, under every torch series
def test_an_operator_a_later_opset_translates_names_it_and_the_fix_sets_it(
        tmp_path: Path) -> None:
    """aten.rms_norm has a translation from opset 23 only (torch's exporter decomposes it
    below that, so a real export never meets it undecomposed): the registry look-up of the
    node as torch.export leaves it says so, and the quick fix sets onnx-opset."""
    pytest.importorskip("onnxscript")
    import torch

    from fxcore.fixing.fix_plan import plan
    from fxcore.model.results import ModuleResult
    from fxcore.worker.capture.onnx.exporter import Exporter
    from fxcore.worker.capture.onnx.operators import untranslated

    class Normed(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.rms_norm(x, (4,))

    found = onnx_exporter_or_skip()
    assert isinstance(found, Exporter)
    program = torch.export.export(Normed(), (torch.ones(2, 4),))
    [problem] = untranslated(found, program.graph_module, 20)
    assert problem.kind == "onnx-needs-newer-opset"
    assert problem.message.startswith("`aten.rms_norm.default` has an ONNX translation only "
                                      "from opset 23 on: at opset 20")
    assert untranslated(found, program.graph_module, 23) == []

    path = str(tmp_path / "models.py")
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'w'\n")
    failure = Failure(path, 3, 1, 3, 9, code="FX602", kind=problem.kind,
                      message=problem.message)
    module = ModuleResult(path=path, class_name="Normed", qualified_name="models:Normed",
                          line=1, column=7, end_line=1, end_column=13, status="failed")
    texts = {str(tmp_path / "pyproject.toml"): "[project]\nname = 'w'\n"}
    [fix] = plan(failure, module, texts.get, lambda _: str(tmp_path))
    assert fix.title == "Check the ONNX export at opset 23 (onnx-opset, pyproject.toml)"
    assert not fix.safe
    _, new = fix.texts(texts.get)
    assert parse_config(tomllib.loads(new)["tool"]["fx-lsp"])[0].onnx_opset == 23


@pytest.mark.slow  # onnxscript's import, the registry and an export in a worker
@pytest.mark.matrix  # the translated model's nodes, under every torch series
def test_the_graph_page_lists_the_onnx_model_beside_the_exported_program(
        tmp_path: Path) -> None:
    pytest.importorskip("onnxscript")
    onnx_exporter_or_skip()
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'w'\n")
    (tmp_path / "models.py").write_text(
        "import torch\nfrom torch import nn\n\n\n"
        "class Head(nn.Module):\n"
        "    def __init__(self) -> None:\n"
        "        super().__init__()\n"
        "        self.fc = nn.Linear(8, 4)\n\n"
        "    def forward(self, x: torch.Tensor) -> torch.Tensor:\n"
        "        return torch.relu(self.fc(x))\n")
    # The graph command stores the verdict in the cache and the check reads it from there:
    # the ONNX nodes go through the result codec and the cache.
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), FX_LSP_CACHE_KEY="test-onnx-graph")
    drawn = subprocess.run(
        [sys.executable, "-m", "fx_lsp", "graph", "--mode", "onnx", "models.py::Head",
         "-o", "head.html"], cwd=tmp_path, capture_output=True, text=True, timeout=600,
        env=env)
    assert drawn.returncode == 0, drawn.stderr[-3000:]
    checked = subprocess.run(
        [sys.executable, "-m", "fx_lsp", "check", "--mode", "onnx", "--output-format", "json",
         "models.py"], cwd=tmp_path, capture_output=True, text=True, timeout=600, env=env)
    assert checked.returncode == 0, checked.stderr[-3000:]
    report = json.loads(checked.stdout)
    assert report["summary"]["cached"] == 1
    [module] = report["modules"]
    onnx_graph = module["onnx_graph"]
    assert f"The ONNX model has {onnx_graph['node_count']} nodes" in \
        " ".join(module["capture_notes"])
    assert not onnx_graph["truncated"] and len(onnx_graph["nodes"]) == onnx_graph["node_count"]
    op_types = [node["op_type"] for node in onnx_graph["nodes"]]
    assert {"Relu"} <= set(op_types) and {"Gemm", "MatMul"} & set(op_types), op_types
    # Each node reads what an earlier node wrote, or the model's inputs and weights.
    relu = next(node for node in onnx_graph["nodes"] if node["op_type"] == "Relu")
    assert any(relu["inputs"][0] in node["outputs"] for node in onnx_graph["nodes"])
    page = (tmp_path / "head.html").read_text(encoding="utf-8")
    assert "<h2>ONNX model</h2>" in page
    assert f"its {onnx_graph['node_count']} nodes" in page
    assert all(f"<td>{op_type}</td>" in page for op_type in op_types)
    assert '"onnx": {"nodeCount": ' in page
