"""The compile capture mode in this process (no fork, as
tests/fxcore/worker/pipeline/test_worker_pipeline.py): each
class of the fidelity corpus (tests/corpus/compile) built on meta and captured with
``torch.compile`` on meta inputs gives exactly the graph breaks, (line, GB code), and the graph
count that compiling it on CPU with real tensors gives (computed in this run by
scripts/compile_ground_truth.py, tests/support/real_torch_answers.py); nothing extra.
"""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest
import torch
from real_torch_answers import compile_answers
from source_modules import corpus_module, load_module

from fxcore.model.job_spec import EngineConfig, TraceJob
from fxcore.model.results import CODES
from fxcore.model.tensor_spec import TensorSpec
from fxcore.rules import BY_CODE
from fxcore.rules.documentation import DOCS_URL_VARIABLE, help_url
from fxcore.worker.building.instances import Built, build_class
from fxcore.worker.capture.compile import compiling as compile_capture
from fxcore.worker.capture.compile.compiling import (
    NO_INPUTS,
    CompileCapture,
    _break_failure,
)
from fxcore.worker.capture.compile.fake_cpu import ON_FAKE_CPU_KERNEL
from fxcore.worker.capture.compile.torch_hooks import eager_code_modes
from fxcore.worker.capture.modes import CAPTURES
from fxcore.worker.job.capture_target import CaptureRecord, CaptureTarget
from fxcore.worker.job.inputs_decision import UNDECIDED, InputsDecision
from fxcore.worker.job.job_context import JobContext
from fxcore.worker.pipeline.verdict import module_verdict
from fxcore.workspace.discovery import top_level_classes

from engine_support import marked_line

#: Compared with real torch on the installed torch: run under every torch series too.
pytestmark = pytest.mark.matrix

CORPUS = Path(__file__).parents[4] / "corpus" / "compile"
#: Real torch's answers, computed in this run on the installed torch.
EXPECTED = compile_answers()
INPUTS = {"x": TensorSpec("float32", (2, 8))}
DECIDED = InputsDecision(INPUTS)


def corpus_target(file: str, name: str) -> tuple[JobContext, CaptureTarget]:
    """The corpus class ``name`` of ``file`` built as a worker builds it (on meta)."""
    path = CORPUS / file
    cls = getattr(corpus_module(path, f"compile_corpus_{path.stem}"), name)
    context = JobContext(TraceJob(path=str(path), workspace_root=str(CORPUS),
                                  config=EngineConfig()))
    source = top_level_classes(path.read_text(encoding="utf-8"))[name]
    built = build_class(context, cls, source)
    assert isinstance(built, Built), built
    return context, CaptureTarget(cls, source, built.model, built.instantiated_on,
                                  built.concrete_args)


def capture(file: str, name: str) -> tuple[JobContext, CaptureTarget, CaptureRecord]:
    context, target = corpus_target(file, name)
    with contextlib.redirect_stdout(io.StringIO()):  # the corpus prints, on purpose
        record = CompileCapture().capture(context, target, DECIDED)
    return context, target, record


@pytest.mark.parametrize("key", sorted(EXPECTED))
@pytest.mark.slow
def test_breaks_on_meta_are_those_of_real_tensors(key: str) -> None:
    """A class that real torch compiles but that fx-lsp cannot check past a line on meta (the
    line marked ``# FX503`` in the corpus) is not checked, with one FX503 there and real
    torch's breaks up to that line; every other class has real torch's breaks and graphs."""
    file, name = key.split(":")
    _, target, record = capture(file, name)
    assert target.instantiated_on == "meta"
    stopped = [(f.path, f.line) for f in record.failures if f.code == "FX503"]
    breaks = [f for f in record.failures if f.code != "FX503"]
    found = sorted([failure.line, "error" if failure.code == "FX502" else failure.code]
                   for failure in breaks if failure.path == str(CORPUS / file))
    assert len(found) == len(breaks), record.failures  # each at a corpus line
    stop = marked_line(CORPUS / file, name, "# FX503")
    if stop is None:
        assert (stopped, record.not_checked) == ([], None)
        assert found == EXPECTED[key]["breaks"]
        assert record.graph_count == EXPECTED[key]["graphs"]
        return
    assert "error" not in {code for _, code in EXPECTED[key]["breaks"]}  # real torch runs it
    assert stopped == [(str(CORPUS / file), stop)]
    assert found == [[line, code] for line, code in EXPECTED[key]["breaks"] if line <= stop]
    assert record.not_checked is not None and record.not_checked.startswith(
        f"not checkable under torch.compile on meta: line {stop} ")


@pytest.mark.slow
def test_the_corpus_covers_many_break_types() -> None:
    codes = {code for truth in EXPECTED.values() for _, code in truth["breaks"]}  # type: ignore[attr-defined]
    assert len(EXPECTED) >= 15 and len(codes) >= 10
    assert sum(not truth["breaks"] for truth in EXPECTED.values()) >= 4


def test_a_break_carries_pytorchs_registry_text_and_page() -> None:
    _, _, record = capture("breaks_python.py", "Branch")
    (failure,) = record.failures
    rule = BY_CODE[failure.code]
    assert failure.code == "GB0170" and rule.mode == "compile" and rule.severity == "warning"
    assert "Data-dependent branching" in failure.message and "torch.cond" in failure.message
    assert rule.url == "https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html"
    assert failure.frames[-1].function == "forward"


def test_a_break_repeated_in_a_loop_or_a_helper_is_reported_once() -> None:
    _, _, record = capture("breaks_python.py", "HelperBreak")
    assert [(f.line, f.code) for f in record.failures] == [(81, "GB0059")]
    assert [f.function for f in record.failures[0].frames][-2:] == ["forward", "noisy_helper"]


def test_a_compile_error_that_is_not_a_break_is_fx502() -> None:
    if EXPECTED["breaks_calls.py:TryExcept"]["breaks"] != [[63, "error"]]:
        pytest.skip(f"real torch.compile of torch {torch.__version__} compiles TryExcept's "
                    "try/except fallback (2.14 on): no compile error to report; "
                    "test_breaks_on_meta_are_those_of_real_tensors checks it agrees")
    _, _, record = capture("breaks_calls.py", "TryExcept")
    (failure,) = record.failures
    assert failure.code == "FX502" and failure.kind == "compile-error"
    assert failure.line == 63


def test_an_error_eager_code_raises_too_is_fx502_with_the_operations_own_message() -> None:
    """A shape mismatch: dynamo wraps it as 'RuntimeError when making fake tensor call' with
    the fake tensors' reprs; the message is the operation's own error, as eager prints it."""
    _, _, record = capture("breaks_calls.py", "ShapeMismatch")
    (failure,) = record.failures
    assert failure.code == "FX502" and failure.line == 95
    assert failure.message == ("torch.compile failed: RuntimeError: a and b must have same "
                               "reduction dim, but got [2, 16] X [8, 4].")


def test_an_operator_without_a_meta_kernel_is_compiled_on_fake_cpu_tensors() -> None:
    """torch.geqrf has no meta kernel: dynamo's fake run on meta fails and breaks the graph,
    where on the CPU fake tensors run its CPU kernel and nothing breaks; compiled again on
    fake CPU tensors, the class has real torch's verdict, and the note says why."""
    context, target, record = capture("needs_real_data.py", "QrFactors")
    assert (record.failures, record.not_checked, record.graph_count) == ([], None, 1)
    assert record.notes == [ON_FAKE_CPU_KERNEL.format(op="`aten::geqrf`")]
    result = module_verdict(context, CompileCapture(), target, DECIDED, record)
    assert result.status == "traceable"


def test_breaks_before_the_line_stay_in_the_not_checked_verdict() -> None:
    context, target, record = capture("needs_real_data.py", "PrintThenCounts")
    assert [f.code for f in record.failures] == ["GB0059", "GB0036", "FX503"]
    assert record.not_checked is not None and "runs `aten::bincount`" in record.not_checked
    result = module_verdict(context, CompileCapture(), target, DECIDED, record)
    assert result.status == "not-traced" and len(result.failures) == 3


@pytest.mark.skipif(not eager_code_modes(), reason="this torch's dynamo traces into a dispatch "
                    "mode's handler, so compile's eager code runs without the CPU kernels")
def test_without_the_dispatchers_kernel_table_no_meta_kernel_stays_a_break_and_says_why(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The break on meta stays (this torch cannot say the CPU runs the operator), and says
    why; the eager code after it runs the CPU kernel, as real torch's does."""
    monkeypatch.setattr("fxcore.worker.meta.meta_limits._kernel_lookup", lambda: None)
    _, _, record = capture("needs_real_data.py", "QrFactors")
    assert record.not_checked is None
    assert [f.code for f in record.failures] == ["GB0087"]
    assert record.failures[0].message.endswith(
        "(fx-lsp: `aten::geqrf` has no meta kernel, and this torch cannot say whether it runs "
        "on the CPU (torch._C._dispatch_has_kernel_for_dispatch_key is missing): reported as "
        "a failure)")


def test_without_example_inputs_the_class_is_not_checked() -> None:
    context, target = corpus_target("breaks_python.py", "Branch")
    record = CompileCapture().capture(context, target, UNDECIDED)
    result = module_verdict(context, CompileCapture(), target, UNDECIDED, record)
    assert result.status == "not-traced" and result.reason == NO_INPUTS
    assert not result.failures


def test_the_verdict_of_a_compile_record() -> None:
    context, target, record = capture("breaks_python.py", "TwoBreaks")
    result = module_verdict(context, CompileCapture(), target, DECIDED, record)
    assert result.status == "failed"
    assert [failure.code for failure in result.failures] == ["GB0059", "GB0124"]
    context, target, record = capture("breaks_python.py", "Clean")
    assert module_verdict(context, CompileCapture(), target, DECIDED, record).status == "traceable"


def test_the_capture_leaves_torch_as_it_found_it() -> None:
    capture("breaks_python.py", "Item")
    meta = torch.ones(2, device="meta")
    with pytest.raises(RuntimeError):
        meta.item()  # the meta stand-ins are gone
    assert torch.ones(2).tolist() == [1.0, 1.0]
    assert not torch.fx.experimental._config.meta_nonzero_assume_all_nonzero


def test_dynamos_guard_timing_is_not_run_and_put_back_after(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """dynamo times each compiled frame's guards for its metrics only: the capture has it
    answer 0 without running, and leaves torch's own function in place after."""
    from torch._dynamo import guards

    if not callable(getattr(guards, "profile_guard_manager", None)):
        pytest.skip("this torch does not time guards")
    timed: list[object] = []

    def timing(*arguments: object) -> float:
        timed.append(arguments)
        return 1.0

    monkeypatch.setattr(guards, "profile_guard_manager", timing)
    _, _, record = capture("breaks_python.py", "TwoBreaks")
    assert len(record.failures) == 2 and timed == []
    assert guards.profile_guard_manager is timing
    torch._dynamo.reset()
    torch.compile(lambda x: x + 1, backend=lambda graph, _inputs: graph.forward)(
        torch.ones(2, device="meta"))
    torch._dynamo.reset()
    assert timed  # plain torch.compile runs it: the capture is what keeps it from running


def test_registered_as_the_compile_mode() -> None:
    assert isinstance(CAPTURES["compile"], CompileCapture)


def test_editors_and_sarif_link_a_break_to_pytorchs_page(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(DOCS_URL_VARIABLE, raising=False)
    assert help_url("GB0170") == BY_CODE["GB0170"].url
    # a break PyTorch's registry does not know: this project's page of its code
    assert help_url("FX501") == "https://fx-lsp.github.io/fx-lsp/codes/FX501/"


def test_a_break_type_the_registry_does_not_know_is_fx501_with_its_type() -> None:
    error = torch._dynamo.exc.Unsupported("it cannot")  # gb_type= is no argument in 2.10
    error.gb_type = "A break from the future"
    recorded = _break_failure(error, "it cannot")
    assert recorded.kind == "graph-break-unknown" and CODES[recorded.kind] == "FX501"
    assert "A break from the future: it cannot" in recorded.message


def test_without_dynamos_break_hook_only_the_first_break_is_found_and_said(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compile_capture, "graph_break_hook", lambda: None)
    _, _, record = capture("breaks_python.py", "TwoBreaks")
    (failure,) = record.failures
    assert (failure.line, failure.code) == (93, "GB0059")
    assert "only the first graph break" in failure.message


def test_the_result_maps_lines_to_the_nodes_of_every_graph() -> None:
    context, target, record = capture("breaks_python.py", "Printing")
    assert record.graph_count == 2
    result = module_verdict(context, CompileCapture(), target, DECIDED, record)
    path = str(CORPUS / "breaks_python.py")
    lines = {line for (file, line) in result.line_nodes if file == path}
    assert {30, 32} <= lines  # `y = x * 2` before the break, `y + 1` after it


def test_two_library_lines_breaking_under_one_workspace_line_are_two_breaks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Breaks at two library lines under one workspace line are two breaks, as real torch
    logs them (a transformers model used as it is puts all its breaks on the class line); the
    first, met again when dynamo compiles the library function alone, stays one."""
    library, workspace = tmp_path / "site", tmp_path / "workspace"
    library.mkdir()
    workspace.mkdir()
    (library / "branching_library.py").write_text(
        "def two_branches(x):\n"
        "    if x.sum() > 0:\n"
        "        x = x + 1\n"
        "    if x.mean() > 0:\n"
        "        x = x * 2\n"
        "    return x\n", encoding="utf-8")
    model = workspace / "model.py"
    model.write_text(
        "from torch import nn\n"
        "from branching_library import two_branches\n"
        "\n"
        "\n"
        "class CallsLibrary(nn.Module):\n"
        "    def forward(self, x):\n"
        "        return two_branches(x) + 1\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(library))
    module = load_module(model, "calls_library_model")
    context = JobContext(TraceJob(path=str(model), workspace_root=str(workspace),
                                  config=EngineConfig()))
    source = top_level_classes(model.read_text(encoding="utf-8"))["CallsLibrary"]
    built = build_class(context, module.CallsLibrary, source)
    assert isinstance(built, Built), built
    record = CompileCapture().capture(context, CaptureTarget(
        module.CallsLibrary, source, built.model, built.instantiated_on, built.concrete_args),
        DECIDED)
    lines = [(f.line, f.code, f.frames[-1].path, f.frames[-1].line) for f in record.failures]
    helper = str(library / "branching_library.py")
    # The second break happens in the library function dynamo compiled alone after the
    # first, whose stack has no workspace frame: it is located on the class (line 5).
    assert lines == [(7, "GB0170", helper, 2), (5, "GB0170", helper, 4)]


def test_a_loop_on_tensor_data_ends_on_meta_and_says_what_was_assumed() -> None:
    """`while x.abs().max() > 1` never ends on meta values that stand for data (it raised a
    RecursionError, FX502): the condition is taken as true once, then false, and the break
    says so; its place and code are real torch's (test_breaks_on_meta_are_those_of_real_tensors)."""
    _, _, record = capture("breaks_python.py", "HalveUntilSmall")
    (failure,) = record.failures
    assert failure.code == "GB0170"
    assert ("the condition on tensor data at line 104 was assumed true the first time and "
            "false after, so a loop on it runs once") in failure.message


def test_a_number_read_from_data_is_one_its_checks_accept_and_the_message_says_so() -> None:
    """On meta, `.item()` gave one, which `torch._check(n > 2)` refused: a GB0088 and an FX502
    that real torch has not. It is now a value the code's checks accept, read from a fake run
    where the number is a symbol; its place and code are real torch's
    (test_breaks_on_meta_are_those_of_real_tensors)."""
    expected = {"CheckedItem": "the number read from tensor data at line {} was taken as 2.5",
                "CheckedCount": "the number read from tensor data at line {} was taken as 8,",
                "CheckedPair": "the numbers read from tensor data at line {} were taken as "
                               "1.0, 3.5"}
    for name, note in expected.items():
        _, _, record = capture("values_from_data.py", name)
        (failure,) = record.failures
        assert failure.code in ("GB0124", "GB0109")
        # The break is at the line that reads the number.
        assert note.format(failure.line) in failure.message, name
    # Where nothing the code says moves a number, it stays one, and nothing is said.
    _, _, record = capture("breaks_python.py", "TwoBreaks")
    assert [f.code for f in record.failures] == ["GB0059", "GB0124"]
    assert not [f for f in record.failures if "taken as" in f.message]


def test_without_fake_tensors_a_number_stays_one_and_the_message_says_why(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("fxcore.worker.capture.export.torch_hooks.missing_guess_hook",
                        lambda: "ShapeEnv.evaluate_expr is missing")
    _, _, record = capture("values_from_data.py", "CheckedItem")
    codes = [f.code for f in record.failures]
    assert (codes[0], codes[-1]) == ("GB0124", "FX502")  # the check refuses the one
    assert record.failures[0].message.endswith(
        "(fx-lsp: the numbers read from tensor data on meta are one, whatever the code checks "
        "of them afterwards: ShapeEnv.evaluate_expr is missing)")
