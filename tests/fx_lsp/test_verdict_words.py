"""The words hover and code lens give each mode's verdict (fx_lsp.verdicts_by_mode): a mode
of several graphs (compile) says its graph breaks and graphs, as the issue's
``export: ok · compile: 2 graph breaks, 3 graphs``."""

from __future__ import annotations

from fx_lsp.features.code_lens import title
from fx_lsp.verdicts_by_mode import modes_line
from fxcore.model.results import Failure, ModuleResult


def verdict(mode: str, status: str, codes: list[str], graph_count: int | None = None
            ) -> ModuleResult:
    module = ModuleResult(path="/w/a.py", class_name="Net", qualified_name="a:Net", line=1,
                          column=1, end_line=1, end_column=4, status=status, mode=mode,
                          graph_count=graph_count)
    module.failures = [Failure(code=code, kind="graph-break", message="", path="/w/a.py",
                               line=2, column=1, end_line=2, end_column=3) for code in codes]
    return module


def test_compile_says_its_breaks_and_graphs() -> None:
    line = modes_line([verdict("fx", "failed", ["FX001"]),
                       verdict("export", "traceable", []),
                       verdict("compile", "failed", ["GB0170", "GB0033"], graph_count=3)])
    assert line == "fx: 1 failure · export: traceable · compile: 2 graph breaks, 3 graphs"


def test_a_whole_compile_and_a_compile_error() -> None:
    assert modes_line([verdict("compile", "traceable", [], graph_count=1)]) == (
        "compile: 0 graph breaks, 1 graph")
    assert modes_line([verdict("compile", "failed", ["GB0170", "FX502"], graph_count=1)]) == (
        "compile: 1 graph break, 1 error, 1 graph")
    assert modes_line([verdict("compile", "not-traced", [])]) == "compile: not traced"


def test_a_lone_modes_lens_does_not_blame_the_constructor_for_an_unchecked_class() -> None:
    """With one mode the lens gives that verdict's title: the constructor's arguments are
    fx's reason for not tracing; export's and compile's are their own (FX404, no inputs)."""
    assert title(verdict("fx", "not-traced", [])) == "FX: not traced (needs arguments)"
    unchecked = verdict("export", "not-traced", ["FX404"])
    assert title(unchecked) == "FX: not traced (export)"
