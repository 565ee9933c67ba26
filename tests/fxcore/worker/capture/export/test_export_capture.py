"""The export capture mode in this process (no fork), against real torch.export.

Each class of the corpus (tests/corpus/export) is built as a worker builds it (on meta) and
captured by ``ExportCapture``; its verdict, first line and set of data-dependent sites must
equal what real ``torch.export`` found on CPU with real weights and inputs
(computed in this run by scripts/export_ground_truth.py), with nothing
extra. With ``export-strict``, its FX405 must be where real strict export first fails, unless
non-strict export fails there too.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import real_torch_answers
import torch
from real_torch_answers import export_answers

from fxcore.model.job_spec import EngineConfig, TraceJob
from fxcore.model.tensor_spec import parse_spec
from fxcore.protocol import result_codec
from fxcore.protocol.worker_messages import Verdict, WorkerMessage
from fxcore.worker.building.instances import Built, build_class
from fxcore.worker.capture.export import strict, torch_hooks
from fxcore.worker.capture.export.exporting import NO_INPUTS, ExportCapture
from fxcore.worker.job.capture_target import CaptureRecord, CaptureTarget
from fxcore.worker.job.inputs_decision import InputsDecision
from fxcore.worker.job.job_context import JobContext
from fxcore.worker.pipeline.job import Job
from fxcore.worker.pipeline.verdict import module_verdict
from fxcore.workspace.discovery import top_level_classes

from engine_support import marked_line

CORPUS = Path(__file__).parents[4] / "corpus" / "export"
#: Real torch's answers, computed in this run on the installed torch.
EXPECTED = export_answers()
#: Compared with real torch on the installed torch: run under every torch series too.
pytestmark = pytest.mark.matrix
DATA_DEPENDENT_KINDS = {"export-data-dependent", "export-python-data"}


@pytest.fixture(scope="module", autouse=True)
def corpus_on_path() -> Iterator[None]:
    sys.path.insert(0, str(CORPUS))
    yield
    sys.path.remove(str(CORPUS))


def captured(key: str, with_inputs: bool = True, config: EngineConfig | None = None
             ) -> tuple[CaptureTarget, JobContext, CaptureRecord]:
    """``file.py:Class`` of the corpus built and captured on its example inputs."""
    file, name = key.split(":")
    path = CORPUS / file
    context = JobContext(TraceJob(path=str(path), workspace_root=str(CORPUS),
                                  config=config or EngineConfig()))
    module = importlib.import_module(path.stem)
    cls = getattr(module, name)
    source = top_level_classes(path.read_text(encoding="utf-8"))[name]
    built = build_class(context, cls, source)
    assert isinstance(built, Built), built
    # The worker exports in eval mode (module-mode "auto"), as the ground truth does.
    built.model.eval()
    target = CaptureTarget(cls, source, built.model, built.instantiated_on,
                           built.concrete_args)
    return target, context, ExportCapture().capture(context, target,
                                                    decided(key, with_inputs))


def decided(key: str, with_inputs: bool = True) -> InputsDecision:
    """The example inputs of ``file.py:Class`` in the corpus, as decided before capture."""
    file, name = key.split(":")
    module = importlib.import_module(Path(file).stem)
    return InputsDecision({arg: parse_spec(text) for arg, text in
                           module.EXAMPLE_INPUTS[name].items()} if with_inputs else None)


@functools.cache
def captured_by_default(key: str) -> tuple[CaptureTarget, JobContext, CaptureRecord]:
    """``captured(key)``, once per key: the corpus comparison reads it, and the strict pass's
    comparison reads its failures again (a second capture was a second of every key's time,
    in every torch series)."""
    return captured(key)


def line_of(file: str, snippet: str) -> int:
    lines = (CORPUS / file).read_text(encoding="utf-8").splitlines()
    return next(number for number, text in enumerate(lines, 1) if snippet in text)


def data_dependent_sites(record: CaptureRecord) -> set[int]:
    """Lines of the sites recovered from; an error that ended the export is the last
    failure when there is no graph, and is no such site."""
    recovered = record.failures if record.graph is not None else record.failures[:-1]
    return {f.line for f in recovered if f.kind in DATA_DEPENDENT_KINDS}


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_capture_on_meta_matches_real_export(key: str) -> None:
    """A class that real export exports but that fx-lsp cannot check past a line on meta (the
    line marked ``# FX404`` in the corpus) is not checked, with one FX404 there: no verdict;
    every other class gets real export's."""
    expected = EXPECTED[key]
    target, _, record = captured_by_default(key)
    assert target.instantiated_on == "meta"
    assert record.notes == []
    file, name = key.split(":")
    stop = marked_line(CORPUS / file, name, "# FX404")
    if stop is not None:
        assert expected["verdict"] == "ok", "FX404 where real export fails too"
        assert [(f.code, f.path, f.line) for f in record.failures] == \
            [("FX404", str(CORPUS / file), stop)]
        assert record.not_checked is not None and record.not_checked.startswith(
            f"not checkable under torch.export on meta: line {stop} ")
        return
    assert record.not_checked is None
    if expected["verdict"] == "ok":
        assert record.failures == [] and record.complete
        assert record.graph_module is not None and record.shapes
        return
    assert record.failures, "real export failed; the capture found nothing"
    assert record.failures[0].line == expected["first_line"]
    assert record.failures[0].path == str(CORPUS / key.split(":")[0])
    sites = expected["data_dependent_lines"]
    if sites is None and "DataDependent" in expected["error"]:
        pytest.skip(f"real torch.export.draft_export itself fails on {key} with torch "
                    f"{torch.__version__} (2.11 and 2.12: a runtime assertion of its "
                    "real-tensor propagation): no data-dependent sites to compare with")
    # draft_export fails on an error that is not about data: there is no site.
    assert data_dependent_sites(record) == set(sites or [])


STRICT = EngineConfig(export_strict=True)


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_strict_pass_on_meta_matches_real_strict_export(key: str) -> None:
    """FX405 at the line where real strict export on CPU fails, when non-strict export does
    not fail there; non-strict export's own failures as without the strict pass."""
    expected = EXPECTED[key]["strict"]
    _, _, record = captured(key, config=STRICT)
    non_strict = [(f.line, f.code) for f in record.failures if f.code != "FX405"]
    strict_only = [f.line for f in record.failures if f.code == "FX405"]
    assert non_strict == [(f.line, f.code) for f in captured_by_default(key)[2].failures]
    if expected["verdict"] == "ok":
        assert strict_only == [] and not any("Strict" in note for note in record.notes)
        return
    assert expected["first_line"] is not None, "a corpus class fails outside its file"
    if expected["first_line"] in {line for line, _ in non_strict}:
        assert strict_only == []
        assert f"Strict export stops at line {expected['first_line']}, where non-strict " \
            f"export fails too" in " ".join(record.notes)
    else:
        assert strict_only == [expected["first_line"]]
        assert record.graph_module is None  # the class fails, whatever non-strict says


def test_an_answer_leaves_the_custom_operator_of_this_process_alone() -> None:
    """Real torch's answer for a class executes its corpus file again, which redefines the
    file's ``torch.library.custom_op`` and destroys the library of the one this process
    imported: a call of that operator then reads freed memory (std::bad_alloc, or a
    SIGSEGV that took the test process with it once, in the strict pass of
    ``CustomOpWithoutFake``; pytorch#98537, pytorch#125234). The answer is computed in a
    child process, and the operator this process captures stays whole."""
    key = "export_needs_real_data.py:CustomOpWithoutFake"
    module = importlib.import_module("export_needs_real_data")
    script = real_torch_answers.ground_truth_script("export")
    answer = real_torch_answers.export_in_child(lambda: script.ground_truth(only={key}), key)
    assert answer[key]["strict"]["verdict"] == "failed"
    assert module.doubled._lib.m is not None  # the library of the operator, not destroyed
    assert torch.equal(module.doubled(torch.ones(2)), torch.full((2,), 2.0))


def test_a_strict_only_failure_says_what_dynamo_cannot_trace() -> None:
    target, context, record = captured("export_strict_only.py:TimedForward", config=STRICT)
    (failure,) = record.failures
    assert (failure.code, failure.line) == ("FX405", line_of(
        "export_strict_only.py", "started = time.perf_counter()"))
    assert failure.message.startswith("Fails only under strict export: ")
    # dynamo's words and code for it are torch's own: GB0007 "`time.perf_counter.`" up to
    # 2.14, GB9193 "`time.perf_counter()`" in 2.15.
    assert "`time.perf_counter" in failure.message
    assert re.search(r"\(GB\d{4}\)", failure.message), failure.message
    assert [frame.path for frame in failure.frames] == [str(CORPUS / "export_strict_only.py")]
    inputs = decided("export_strict_only.py:TimedForward")
    result = module_verdict(context, ExportCapture(), target, inputs, record)
    # Failed, with the graph non-strict export made still there to draw.
    assert result.status == "failed" and result.graph
    assert all(p.is_meta for p in target.module.parameters())


def test_a_strict_failure_in_a_helper_is_at_the_helpers_line() -> None:
    _, _, record = captured("export_strict_only.py:SaltInHelper", config=STRICT)
    assert [(f.line, f.code) for f in record.failures] == [
        (line_of("export_strict_only.py", "zlib.crc32("), "FX405")]
    assert [frame.function for frame in record.failures[0].frames] == ["forward", "salted"]


def test_without_the_key_there_is_no_strict_pass() -> None:
    for name in ("TimedForward", "LockedScale", "ParsedConfig", "SaltInHelper"):
        _, _, record = captured(f"export_strict_only.py:{name}")
        assert record.failures == [] and record.complete and record.notes == []


def test_without_dynamo_the_strict_pass_is_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch_hooks, "missing_strict_export",
                        lambda: "torch._dynamo does not support this Python")
    _, _, record = captured("export_strict_only.py:TimedForward", config=STRICT)
    assert record.failures == [] and record.complete
    assert record.notes == ["Strict export (export-strict) is not checked: torch._dynamo does "
                            "not support this Python."]


@pytest.fixture
def without_user_stack(monkeypatch: pytest.MonkeyPatch) -> None:
    """Strict export's real error, as a torch that attaches no ``real_stack`` raises it."""
    original = strict.strict_export_error

    def strict_export_error(*args: object) -> BaseException | None:
        error = original(*args)  # type: ignore[arg-type]
        if error is not None and hasattr(error, "real_stack"):
            del error.real_stack
        return error

    monkeypatch.setattr(strict, "strict_export_error", strict_export_error)


def test_an_unlocated_strict_failure_is_at_the_class(without_user_stack: None) -> None:
    target, _, record = captured("export_strict_only.py:TimedForward", config=STRICT)
    assert [(f.line, f.code) for f in record.failures] == [
        (target.source.name_span.line, "FX405")]
    assert record.notes == ["Strict export fails at no line of this workspace (dynamo attached "
                            "no user stack to the error, `real_stack`): FX405 is placed at the "
                            "class."]


def test_an_unlocated_strict_failure_beside_non_strict_ones_is_a_note(
        without_user_stack: None) -> None:
    _, _, record = captured("export_strict_only.py:TimedGate", config=STRICT)
    assert [f.code for f in record.failures] == ["FX401"]
    assert record.notes == ["Strict export fails too, at no line of this workspace (dynamo "
                            "attached no user stack to the error, `real_stack`): not reported "
                            "apart from non-strict export's failures."]


def test_every_site_is_one_failure_with_the_guesses_before_it() -> None:
    _, _, record = captured("export_python_data.py:EverySite")
    lines = [(f.line, f.code) for f in record.failures]
    assert lines == [(40, "FX401"), (42, "FX402"), (44, "FX401"), (46, "FX401")]
    assert "`Eq(" in record.failures[0].message
    assert "after guesses" not in record.failures[0].message
    assert "Checked after guesses at lines 40, 42, 44." in record.failures[3].message
    # One pass went on to the end: the graph of the guessed path is there to draw.
    assert record.graph is not None and record.graph_module is None


def test_data_dependent_while_finishes_as_one_site() -> None:
    _, _, record = captured("export_data_dependent.py:HalveWhileLarge")
    line = line_of("export_data_dependent.py", "while x.abs().max() > 1:")
    assert [(f.line, f.code) for f in record.failures] == [(line, "FX401")]
    assert "assumed it True" in record.failures[0].message


def test_error_after_a_guess_is_a_possible_consequence() -> None:
    _, _, record = captured("export_failing.py:BrokenBranch")
    first, ending = record.failures
    assert (first.line, first.code, first.possible_consequence) == (38, "FX401", False)
    assert (ending.line, ending.code, ending.possible_consequence) == (39, "FX499", True)
    assert ending.message.startswith("(May be a consequence of the values fx-lsp assumed at "
                                     "line(s) 38")


def test_a_condition_inside_a_guessed_branch_is_a_possible_consequence() -> None:
    _, _, record = captured("export_data_dependent.py:NestedConditions")
    outer, inner = record.failures
    assert (outer.possible_consequence, inner.possible_consequence) == (False, True)
    assert inner.message.startswith(f"(May be a consequence of the data-dependent condition at "
                                    f"line {outer.line}, which tracing recovered from.)")


def test_two_guards_of_one_condition_are_one_failure() -> None:
    _, _, record = captured("export_data_dependent.py:TwoGuardsOnALine")
    line = line_of("export_data_dependent.py", "if x.sum() > 0 and x.max() > 2:")
    assert [(f.line, f.code) for f in record.failures] == [(line, "FX401")]
    # Each guard is its own call site, so both were first decisions, guessed True: the
    # branch ran (a per-line guess would have answered the second False).
    assert record.graph is not None
    assert "aten.add.Tensor" in {str(node.target) for node in record.graph.nodes}


def test_int_and_float_of_an_item_are_python_data() -> None:
    # The int .item() is the bare symbol u0, which sympy counts as a Boolean: it is a number.
    _, _, record = captured("export_number_casts.py:CountAndScale")
    assert [(f.line, f.code) for f in record.failures] == [(13, "FX402"), (14, "FX402")]
    assert "(`u0`)" in record.failures[0].message and "assumed 1 " in record.failures[0].message
    assert "assumed 1.0 " in record.failures[1].message


def test_numpy_ends_the_export_as_python_data() -> None:
    _, _, record = captured("export_python_data.py:ThroughNumpy")
    assert [(f.line, f.code) for f in record.failures] == [(34, "FX402")]


def test_without_inputs_the_class_is_not_checked_at_its_name() -> None:
    target, context, record = captured("export_traceable.py:Mlp", with_inputs=False)
    assert record.not_checked == NO_INPUTS and record.failures == []
    inputs = decided("export_traceable.py:Mlp", with_inputs=False)
    result = module_verdict(context, ExportCapture(), target, inputs, record)
    assert (result.status, result.reason) == ("not-traced", NO_INPUTS)
    assert result.line == target.source.name_span.line


def test_traceable_verdict_carries_the_exported_graph() -> None:
    target, context, record = captured("export_traceable.py:PositionalEmbedding")
    inputs = decided("export_traceable.py:PositionalEmbedding")
    result = module_verdict(context, ExportCapture(), target, inputs, record)
    assert result.status == "traceable"
    assert result.generated_code is not None and "aten.embedding" in result.generated_code
    path = CORPUS / "export_traceable.py"
    line = line_of(path.name, "torch.arange(tokens.shape[1])")
    assert [node.target for node in result.line_nodes[(str(path), line)]] == \
        ["torch.ops.aten.arange.default"]
    assert {"tokens", "positions"} <= set(result.scope_types)
    assert result.parameter_order == ["tokens.weight", "positions.weight"]
    output = next(node for node in result.graph if node.op == "call_function"
                  and node.target == "torch.ops.aten.add.Tensor")
    assert output.shape == "float32[2, 6, 16]"
    # The built instance keeps its own (meta) weights for the other modes.
    assert all(p.is_meta for p in target.module.parameters())


#: Captures in a fresh process, recovery off for the second so that export raises: torch
#: then logs warnings and errors through its own handlers and prints the partial graph
#: (strict export, dynamo, prints it for a data-dependent branch).
_QUIET_SCRIPT = """
import sys
sys.path[:0] = [{here!r}, {tests!r}, {corpus!r}]
import test_export_capture as test
test.captured("export_python_data.py:EverySite")
test.captured("export_strict_only.py:TimedGate", config=test.STRICT)
import fxcore.worker.capture.export.exporting as capture
capture.missing_hook = lambda: "off"
test.captured("export_python_data.py:EverySite")
test.captured("export_failing.py:WrongProjection")
"""


@pytest.mark.matrix_sweep  # heavy: an edge series only (test-torch-matrix.sh)
@pytest.mark.slow  # over 12 s in the loaded fast tier
def test_torch_output_does_not_reach_the_terminal_nor_files(tmp_path: Path) -> None:
    script = _QUIET_SCRIPT.format(here=str(Path(__file__).parent),
                                  tests=str(Path(__file__).parents[4] / "support"),
                                  corpus=str(CORPUS))
    temp = tmp_path / "tmp"
    temp.mkdir()
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "TMPDIR": str(temp)})
    assert run.returncode == 0, run.stderr
    assert (run.stdout, run.stderr) == ("", "")
    assert list(temp.iterdir()) == []


def test_missing_hook_is_detected(monkeypatch: pytest.MonkeyPatch) -> None:
    assert torch_hooks.missing_guess_hook() is None
    assert torch_hooks.missing_fake_tensors() is None
    assert torch_hooks.missing_strict_export() is None
    monkeypatch.setattr(torch_hooks, "ShapeEnv", type("ShapeEnv", (), {}))
    assert torch_hooks.missing_guess_hook() == "ShapeEnv.evaluate_expr is missing"
    monkeypatch.setattr(torch_hooks, "FakeTensorMode", None)
    assert torch_hooks.missing_fake_tensors() is not None


def test_missing_hook_degrades_to_the_first_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("fxcore.worker.capture.export.torch_hooks.missing_guess_hook",
                        lambda: "ShapeEnv.evaluate_expr is missing")
    target, context, record = captured("export_python_data.py:EverySite")
    assert [(f.line, f.code) for f in record.failures] == [(40, "FX401")]
    assert record.notes == ["Only the first failure is found: this torch cannot be resumed "
                            "after a data-dependent guard (ShapeEnv.evaluate_expr is missing)."]
    inputs = decided("export_python_data.py:EverySite")
    result = module_verdict(context, ExportCapture(), target, inputs, record)
    assert (result.status, result.capture_notes) == ("failed", record.notes)


def test_without_fake_tensors_the_class_is_not_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("fxcore.worker.capture.export.torch_hooks.FakeTensorMode", None)
    _, _, record = captured("export_traceable.py:Mlp")
    assert record.not_checked == (
        "not checkable under torch.export in this torch: torch._subclasses.fake_tensor."
        "FakeTensorMode or torch.fx.experimental.symbolic_shapes.ShapeEnv is missing")


def test_a_job_with_the_export_mode_sends_checked_results(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """Through the worker's ``Job`` (in this process) and the worker-message codec: the
    class gets inputs decided before capture, and what the mode adds survives the codec."""
    sent: list[WorkerMessage] = []
    # A name of its own: the other tests imported the corpus file already.
    path = tmp_path / "export_job_model.py"
    path.write_text((CORPUS / "export_traceable.py").read_text(encoding="utf-8"),
                    encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    job = TraceJob(path=str(path), workspace_root=str(tmp_path), config=EngineConfig(),
                   only_classes=["Mlp"])
    Job(job, sent.append, [ExportCapture()]).run()
    modules = [message.module for message in sent if isinstance(message, Verdict)]
    assert len(modules) == 1
    module = result_codec.decode_module_result(result_codec.loads(result_codec.dumps(
        modules[0])))
    # The job decided its inputs before the capture (inferred from the first Linear).
    assert (module.class_name, module.status, module.reason) == ("Mlp", "traceable", None)
    assert module.inputs is not None and module.inputs.origin == "inferred"
    noted = dataclasses.replace(module, capture_notes=["Only the first failure is found."])
    assert result_codec.decode_module_result(result_codec.loads(result_codec.dumps(
        noted))).capture_notes == ["Only the first failure is found."]


def test_a_meta_tensor_fx_lsp_cannot_fake_is_fx404_at_its_line_and_no_verdict() -> None:
    """Real export on CPU succeeds here; on meta the listed tensor stays meta beside fake
    CPU ones, which is no verdict about the code: FX404 at the line, the class not checked."""
    target, context, record = captured("export_needs_real_data.py:HeldTable")
    line = line_of("export_needs_real_data.py", "return x + self.tables[0]  # FX404")
    (stopped,) = record.failures
    assert (stopped.code, stopped.kind, stopped.line) == ("FX404", "export-not-checkable", line)
    assert stopped.message.startswith("Not checkable under torch.export without real data: "
                                      "this line uses a tensor on the meta device beside CPU")
    # torch's own words differ by release ("cpu and meta"; 2.11: "devices cpu, meta").
    assert "cpu" in stopped.message.rpartition("(torch: ")[2]
    assert "meta" in stopped.message.rpartition("(torch: ")[2]
    assert record.not_checked is not None and record.graph is None
    inputs = decided("export_needs_real_data.py:HeldTable")
    result = module_verdict(context, ExportCapture(), target, inputs, record)
    assert (result.status, result.reason) == ("not-traced", record.not_checked)
    assert result.failures == [stopped]
    decoded = result_codec.decode_module_result(result_codec.loads(result_codec.dumps(result)))
    assert decoded.failures == [stopped]


def test_an_operator_without_a_meta_kernel_is_fx404_where_it_runs() -> None:
    _, _, record = captured("export_needs_real_data.py:HeldQr")
    line = line_of("export_needs_real_data.py", "torch.geqrf(self.tables[0])")
    assert [(f.code, f.line) for f in record.failures] == [("FX404", line)]
    assert "this line runs `aten::geqrf`, which has no meta kernel." in \
        record.failures[0].message
    assert record.not_checked == (
        f"not checkable under torch.export on meta: line {line} runs `aten::geqrf`, which has "
        f"no meta kernel (FX404; torch: aten::geqrf: attempted to run this operator with Meta "
        f"tensors, but there was no fake impl or Meta kernel registered.)")


def test_without_the_dispatchers_kernel_table_no_meta_kernel_stays_fx499_and_says_why(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("fxcore.worker.meta.meta_limits._kernel_lookup", lambda: None)
    _, _, record = captured("export_needs_real_data.py:HeldQr")
    assert record.not_checked is None
    assert [f.code for f in record.failures] == ["FX499"]
    assert record.notes == [
        "`aten::geqrf` has no meta kernel, and this torch cannot say whether it runs on the "
        "CPU (torch._C._dispatch_has_kernel_for_dispatch_key is missing): reported as a "
        "failure"]


def test_a_class_built_on_the_cpu_gets_a_verdict_for_its_own_meta_tensors() -> None:
    """Only a class built on meta meets meta tensors that real torch would not: one built on
    the CPU that makes a meta tensor itself fails as real export does."""
    target, context, _ = captured("export_needs_real_data.py:HeldTable")
    target.instantiated_on = "cpu"
    inputs = decided("export_needs_real_data.py:HeldTable")
    record = ExportCapture().capture(context, target, inputs)
    assert record.not_checked is None and [f.code for f in record.failures] == ["FX499"]
