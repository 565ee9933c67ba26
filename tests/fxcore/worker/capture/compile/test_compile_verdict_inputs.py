"""A compile-mode verdict says which example inputs it ran ``forward`` on (``inputs`` in the
JSON), so its graph breaks can be checked against a real run on those very inputs
(``tests/thirdparty/test_compile_fidelity.py``)."""

from __future__ import annotations

from pathlib import Path

from fxcore.model.job_spec import EngineConfig, TraceJob
from fxcore.model.results import ExampleInputs
from fxcore.model.tensor_spec import TensorSpec
from fxcore.worker.building.instances import Built, build_class
from fxcore.worker.capture.compile.compiling import CompileCapture
from fxcore.worker.job.capture_target import CaptureTarget
from fxcore.worker.job.inputs_decision import InputsDecision
from fxcore.worker.job.job_context import JobContext
from fxcore.worker.pipeline.verdict import module_verdict
from fxcore.workspace.discovery import top_level_classes

CORPUS = Path(__file__).parents[4] / "corpus" / "compile"


def verdict_inputs(name: str) -> ExampleInputs | None:
    path = CORPUS / "breaks_python.py"
    namespace: dict[str, object] = {"__name__": "compile_verdict_inputs"}
    exec(compile(path.read_text(encoding="utf-8"), str(path), "exec"), namespace)
    cls = namespace[name]
    context = JobContext(TraceJob(path=str(path), workspace_root=str(CORPUS),
                                  config=EngineConfig()))
    source = top_level_classes(path.read_text(encoding="utf-8"))[name]
    built = build_class(context, cls, source)
    assert isinstance(built, Built), built
    target = CaptureTarget(cls, source, built.model, built.instantiated_on,
                           built.concrete_args)
    inputs = InputsDecision({"x": TensorSpec("float32", (2, 8))}, "inferred")
    capture = CompileCapture()
    return module_verdict(context, capture, target, inputs,
                          capture.capture(context, target, inputs)).inputs


def test_a_compiled_class_reports_the_inputs_it_ran_on() -> None:
    assert verdict_inputs("Clean") == ExampleInputs("inferred", {"x": "float32[2, 8]"})


def test_a_class_with_breaks_reports_the_inputs_it_ran_on() -> None:
    assert verdict_inputs("TwoBreaks") == ExampleInputs("inferred", {"x": "float32[2, 8]"})
