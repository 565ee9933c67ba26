"""The compile ground truth reads every graph break of a real run from PyTorch's own
``graph_breaks`` log: file, line and GB code (needs torch only)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import sysconfig
from pathlib import Path

import torch
from compile_agreement import compare
from compile_ground_truth import compile_once, parse_break

CORPUS = Path(__file__).resolve().parent.parent / "corpus" / "compile"


def corpus_class(name: str, file: str = "breaks_python.py") -> type:
    spec = importlib.util.spec_from_file_location("compile_truth_corpus", CORPUS / file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def test_each_break_of_a_real_run_with_its_line_and_code() -> None:
    with contextlib.redirect_stdout(io.StringIO()):  # the class prints, on purpose
        row = compile_once(corpus_class("TwoBreaks")(), {"x": torch.ones(2, 8)})
    path = str((CORPUS / "breaks_python.py").resolve())
    assert row["verdict"] == "breaks"
    assert [(b["path"], b["line"], b["code"]) for b in row["breaks"]] == [
        (path, 93, "GB0059"), (path, 95, "GB0124")]
    assert row["graph_count"] >= 1 and row["error"] is None


def test_a_class_without_breaks_is_one_graph() -> None:
    row = compile_once(corpus_class("Clean")(), {"x": torch.ones(2, 8)})
    assert row == {"verdict": "whole", "breaks": [], "graph_count": 1, "error": None}


def test_a_break_in_a_loop_is_the_loop_break_gb7000() -> None:
    """dynamo logs a break raised while it handled another (GB7000, "graph break in loop")
    with the earlier break's message and page first: the code is the last page's, as the
    exception's ``gb_type`` and the corpus ground truth (scripts/compile_ground_truth.py)
    say."""
    row = compile_once(corpus_class("LoopBranch")(), {"x": torch.ones(2, 8)})
    path = str((CORPUS / "breaks_python.py").resolve())
    assert [(b["path"], b["line"], b["code"], b["reason"]) for b in row["breaks"]] == [
        (path, 75, "GB7000", "graph break in loop")]


def test_a_compile_error_with_the_line_that_raised_it() -> None:
    """fx-lsp's FX502 is compared by its first line and innermost user frame."""
    row = compile_once(corpus_class("TryExcept", "breaks_calls.py")(), {"x": torch.ones(2, 8)})
    assert row["verdict"] == "error" and row["breaks"] == []
    text = row["error"].pop("text")
    assert row["error"] == {"exception": "TorchRuntimeError",
                            "message": "RuntimeError when making fake tensor call",
                            "path": str((CORPUS / "breaks_calls.py").resolve()), "line": 63}
    assert "view" in text


def test_an_operations_own_error_agrees_with_fx_lsps_fx502() -> None:
    """A shape mismatch: the real error's first line is dynamo's wrapping; fx-lsp's FX502
    names the operation's own error, which the real error's text quotes."""
    row = compile_once(corpus_class("ShapeMismatch", "breaks_calls.py")(),
                       {"x": torch.ones(2, 8)})
    path = str((CORPUS / "breaks_calls.py").resolve())
    truth = {**row, "path": path, "class": "ShapeMismatch"}
    message = ("torch.compile failed: RuntimeError: a and b must have same reduction dim, "
               "but got [2, 16] X [8, 4].")
    linear = str(Path(torch.nn.modules.linear.__file__).resolve())
    module = {"status": "failed", "failures": [
        {"code": "FX502", "message": message, "path": path, "line": 95,
         "frames": [{"path": path, "line": 95}, {"path": linear, "line": 134}]}]}
    assert compare(truth, module).first
    other = {**module, "failures": [{**module["failures"][0],
                                     "message": "torch.compile failed: RuntimeError: other"}]}
    assert not compare(truth, other).first


def test_a_break_logged_in_the_standard_library_is_placed_where_the_code_called_into_it(
) -> None:
    """torch 2.12 logs WrappedBart's break inside ``copy.py`` (transformers deep-copies its
    config); fx-lsp hides standard-library frames and places it at the library's line, and
    so does the ground truth, keeping where dynamo logged it."""
    stdlib = sysconfig.get_paths()["stdlib"]
    library = "/venv/lib/python3.11/site-packages/transformers/configuration_utils.py"
    message = (f"Graph break in user code at {stdlib}/copy.py:161\n"
               "Graph Break Reason: Attempted to call function marked as skipped\n"
               "  Explanation: ...\n\n"
               "User code traceback:\n"
               f'  File "{library}", line 1568, in to_dict\n'
               "    output = copy.deepcopy(self.__dict__)\n"
               f'  File "{stdlib}/copy.py", line 161, in deepcopy\n'
               "    y = copier(memo)\n\n"
               "For more details see https://meta-pytorch.github.io/compile-graph-break-site"
               "/gb/gb0007.html")
    found = parse_break(message)
    assert found is not None
    assert (found["path"], found["line"], found["code"]) == (
        "<site-packages>/transformers/configuration_utils.py", 1568, "GB0007")
    assert found["logged_at"].endswith("copy.py:161")


def test_a_break_logged_in_a_dynamo_polyfill_is_placed_at_the_users_call() -> None:
    """``all(mask)`` over a tensor: dynamo runs its polyfill of ``all`` and logs the
    data-dependent break there (vit-pytorch's CaiT and XCiT layer drop); fx-lsp places it at
    the user's ``all(...)`` line, and so does the ground truth."""
    real = compile_once(_AllOverTensor(), {"x": torch.ones(4)})
    assert real["verdict"] == "breaks", real
    first = real["breaks"][0]
    assert (first["path"].endswith("test_compile_ground_truth.py"), first["line"]) == (
        True, _ALL_LINE), first
    assert "polyfills" in first["logged_at"], first


class _AllOverTensor(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if all(x > 0):  # the break's line
            return x + 1
        return x - 1


_ALL_LINE = _AllOverTensor.forward.__code__.co_firstlineno + 1
