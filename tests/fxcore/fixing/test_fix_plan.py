"""fxcore.fixing.fix_plan: which quick fixes fit a failure, planned without an editor."""

from __future__ import annotations

from pathlib import Path

from fxcore.fixing.fix_plan import plan
from fxcore.model.results import Failure, Frame, ModuleResult
from fxcore.workspace.parsing import outline

SOURCE = """import torch
from torch import nn


def scale(x):
    if x.sum() > 0:
        return x * 2
    return x


class UsesLen(nn.Module):
    def forward(self, x):
        return scale(x) * len(x)
"""


def _failure(path: str, kind: str, line: int, column: int, end: int, function: str) -> Failure:
    frames = [Frame(path, 13, 16, 13, 24, "forward")]
    if function != "forward":
        frames.append(Frame(path, line, column, line, end, function))
    return Failure(path, line, column, line, end, code="FX000", kind=kind, message="",
                   frames=frames)


def _module(path: str) -> ModuleResult:
    return ModuleResult(path=path, class_name="UsesLen", qualified_name="model:UsesLen",
                        line=11, column=7, end_line=11, end_column=14, status="failed")


def test_outline_lists_top_level_classes_and_functions() -> None:
    found = outline(SOURCE)
    assert found is not None
    assert found.classes == (("UsesLen", 11, 13),)
    assert found.functions == {"scale"}
    assert outline("def broken(:\n") is None


def test_len_failure_gets_the_len_fixes_with_their_texts(tmp_path: Path) -> None:
    path = str(tmp_path / "model.py")
    texts = {path: SOURCE}
    failure = _failure(path, "len", 13, 27, 33, "forward")
    fixes = plan(failure, _module(path), texts.get, lambda _: str(tmp_path))
    assert [fix.title for fix in fixes] == [
        'Wrap len for tracing: torch.fx.wrap("len")',
        "Replace len(x) with .size(0)",
    ]
    old, new = fixes[1].texts(texts.get)
    assert old == SOURCE and "return scale(x) * x.size(0)" in new


def test_failure_in_a_module_level_helper_offers_to_wrap_it(tmp_path: Path) -> None:
    path = str(tmp_path / "model.py")
    texts = {path: SOURCE}
    failure = _failure(path, "control-flow", 6, 8, 19, "scale")
    titles = [fix.title for fix in plan(failure, _module(path), texts.get, lambda _: "")]
    assert titles == ["Decorate scale() with @torch.fx.wrap (traced as one call)"]


def test_no_failure_or_unreadable_source_plans_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "model.py")
    assert plan(None, None, {path: SOURCE}.get, lambda _: "") == []
    failure = _failure(path, "len", 13, 27, 33, "forward")
    assert plan(failure, None, {}.get, lambda _: "") == []


# torch.export and torch.compile

PT2_SOURCE = """from torch import nn


def gate(x):
    if x.norm() > 1:
        return x / x.norm()
    return x


class Checked(nn.Module):
    def forward(self, x):
        label = "größe"; n = int((x > 0).sum().item())
        assert (x > 0).all(), "positive"
        print("n", n)
        if x.sum() > 0:
            x = gate(x)
        return x[:, :n] * float(x.max().item()) * int(x.sum())
"""


COND_X = ("Rewrite the if as torch.cond (the graph keeps both branches; it assigns x from "
          "lambdas)")


def _pt2(path: str, code: str, kind: str, span: tuple[int, int, int, int],
         function: str = "forward", message: str = "") -> Failure:
    line, column, end_line, end_column = span
    frames = [Frame(path, line, column, end_line, end_column, "forward")]
    if function != "forward":
        frames = [Frame(path, 16, 17, 16, 24, "forward"),
                  Frame(path, line, column, end_line, end_column, function)]
    return Failure(path, line, column, end_line, end_column, code=code, kind=kind,
                   message=message, frames=frames)


def _checked(path: str) -> ModuleResult:
    return ModuleResult(path=path, class_name="Checked", qualified_name="model:Checked",
                        line=10, column=7, end_line=10, end_column=14, status="failed")


def test_sites_are_located_in_characters() -> None:
    from fxcore.fixing.pt2_plan import pt2_sites
    sites = pt2_sites(PT2_SOURCE)
    assert sites is not None
    where = {(site.kind, site.range.line, site.range.column, site.range.end_column,
              site.label) for site in sites}
    # "größe" is 7 bytes in 5 characters: columns count the characters.
    assert ("int", 12, 30, 55, "int()") in where
    assert ("assert", 13, 16, 29, "assert") in where
    assert ("logging", 14, 9, 22, "print()") in where
    assert ("float", 17, 27, 48, "float()") in where
    assert not {site for site in sites if site.range.line == 17 and site.kind == "int"}
    assert pt2_sites("def broken(:\n") is None
    labels = pt2_sites("self.logger.info('a')\nlogging.getLogger().warning('b')\nx.sum()\n") or ()
    assert [site.label for site in labels] == ["self.logger.info()", "warning()"]


def _plan(failure: Failure, path: str, texts: dict[str, str]) -> list:
    return plan(failure, _checked(path), texts.get, lambda _: str(Path(path).parent))


def test_export_failures_get_no_torch_fx_fixes(tmp_path: Path) -> None:
    # torch.fx.wrap and leaf modules change nothing torch.export or torch.compile does.
    path = str(tmp_path / "model.py")
    texts = {path: PT2_SOURCE}
    in_helper = _pt2(path, "FX401", "export-data-dependent", (5, 8, 5, 20), "gate")
    # gate()'s early return gets its torch.cond rewrite, not torch.fx.wrap.
    assert [fix.title for fix in _plan(in_helper, path, texts)] == [
        "Rewrite the if and the return after it as torch.cond (the graph keeps both branches; "
        "it returns from lambdas)"]
    at_branch = _pt2(path, "GB0170", "graph-break-gb0170", (16, 9, 16, 20))
    assert _plan(at_branch, path, texts) == []


def test_assert_on_a_tensor_gets_the_unsafe_assert_async_fix(tmp_path: Path) -> None:
    path = str(tmp_path / "model.py")
    texts = {path: PT2_SOURCE}
    (fix,) = _plan(_pt2(path, "FX401", "export-data-dependent", (13, 16, 13, 29)), path, texts)
    assert fix.title == "Replace assert with torch._assert_async (a check torch.export keeps)"
    assert (fix.safe, fix.preferred, fix.position) == (False, True, (13, 16))
    old, new = fix.texts(texts.get)
    assert old == PT2_SOURCE
    assert new.startswith("from torch import nn\nimport torch\n\n\ndef gate")  # its import
    assert '        torch._assert_async((x > 0).all(), "positive")\n' in new
    # A condition in an `if`, not an assert: its torch.cond rewrite, no assert fix.
    assert [fix.title for fix in _plan(_pt2(path, "FX401", "export-data-dependent",
                                            (15, 12, 15, 23)), path, texts)] == [COND_X]


def test_int_of_an_item_gets_the_safe_sym_int_fix(tmp_path: Path) -> None:
    path = str(tmp_path / "model.py")
    texts = {path: PT2_SOURCE}
    (fix,) = _plan(_pt2(path, "FX402", "export-python-data", (12, 30, 12, 55)), path, texts)
    assert fix.title == "Replace int() with torch.sym_int() (symbolic under torch.export)"
    assert fix.safe and fix.position == (12, 30)
    assert "n = torch.sym_int((x > 0).sum().item())" in fix.texts(texts.get)[1]
    # int() of a tensor itself: sym_int would do the same int(), which export cannot.
    assert _plan(_pt2(path, "FX402", "export-python-data", (17, 51, 17, 63)), path,
                 texts) == []


def test_graph_break_at_a_print_gets_the_unsafe_compiling_guard(tmp_path: Path) -> None:
    path = str(tmp_path / "model.py")
    texts = {path: PT2_SOURCE}
    for code, kind in (("GB0059", "graph-break-gb0059"), ("FX501", "graph-break-unknown")):
        (fix,) = _plan(_pt2(path, code, kind, (14, 9, 14, 22)), path, texts)
        assert fix.title == ("Run print() only outside torch.compile (if not "
                             "torch.compiler.is_compiling())")
        assert not fix.safe and fix.position == (14, 9)
        assert "        if not torch.compiler.is_compiling():\n            print(\"n\", n)\n" \
            in fix.texts(texts.get)[1]
    # A compile error that is not a graph break is not avoided by skipping the call.
    assert _plan(_pt2(path, "FX502", "compile-error", (14, 9, 14, 22)), path, texts) == []


def _constraint(fixes_text: str) -> str:
    """An FX403 message as the export capture words it (``constraint_message``)."""
    return ("The dynamic dimension 'batch' is not dynamic in this code: Not all values of "
            "batch = L['x'].size()[0] in the specified range batch <= 64 satisfy the "
            f"generated guard 2 <= L['x'].size()[0] and L['x'].size()[0] <= 16 torch "
            f"suggests: {fixes_text}. (the guard torch added here: `s77 <= 16`)")


def test_dynamic_constraint_gets_torchs_suggestion_as_an_unsafe_fix(tmp_path: Path) -> None:
    path = str(tmp_path / "model.py")
    pyproject = str(tmp_path / "pyproject.toml")
    texts = {path: PT2_SOURCE, pyproject: '[tool.fx-lsp.modules."model:Checked"]\n'
             'dynamic = {x = {0 = {name = "batch", min = 2, max = 64}}}\n'}
    narrower = _pt2(path, "FX403", "export-dynamic-constraint", (15, 12, 15, 23),
                    message=_constraint("batch = Dim('batch', max=16)"))
    (fix,) = _plan(narrower, path, texts)
    assert fix.title == ("Give 'batch' the bounds torch suggests: max=16 (dynamic, "
                         "pyproject.toml)")
    assert (fix.path, fix.safe) == (pyproject, False)
    assert 'dynamic = {x = {0 = {name = "batch", min = 2, max = 16}}}' in \
        fix.texts(texts.get)[1]
    static = _pt2(path, "FX403", "export-dynamic-constraint", (15, 12, 15, 23),
                  message=_constraint("other = 3; batch = 4"))
    (fix,) = _plan(static, path, texts)
    assert fix.title == "Make 'batch' static, as torch suggests (dynamic, pyproject.toml)"
    assert "dynamic = {}" in fix.texts(texts.get)[1]  # static shapes: no FX407 either
    derived = _pt2(path, "FX403", "export-dynamic-constraint", (15, 12, 15, 23),
                   message=_constraint("_batch = Dim('_batch', max=8); batch = 2*_batch"))
    assert _plan(derived, path, texts) == []


def test_one_pass_makes_the_positioned_edits_then_their_import(tmp_path: Path) -> None:
    # `import torch` is added last: added by the first edit made (the last in the file), it
    # would move the lines the edits above it are located by.
    from fxcore.fixing.fix_apply import plan_edits
    from fxcore.reporting.report import Problem, Reach
    path = str(tmp_path / "model.py")
    texts = {path: PT2_SOURCE}
    failures = [_pt2(path, "FX402", "export-python-data", (12, 30, 12, 55)),
                _pt2(path, "FX401", "export-data-dependent", (13, 16, 13, 29)),
                _pt2(path, "GB0059", "graph-break-gb0059", (14, 9, 14, 22)),
                _pt2(path, "FX402", "export-python-data", (17, 27, 17, 48))]
    problems = [Problem(**failure.span(), code=failure.code, message="", severity="error",
                        reached=[Reach(path, _checked(path), failure)])
                for failure in failures]
    safe = plan_edits(problems, texts.get, lambda _: str(tmp_path))
    assert [title for _, title in safe.fixed] == [
        "Replace float() with torch.sym_float() (symbolic under torch.export)",
        "Replace int() with torch.sym_int() (symbolic under torch.export)"]
    every = plan_edits(problems, texts.get, lambda _: str(tmp_path), unsafe=True)
    assert len(every.fixed) == 4
    _, new = every.files[path]
    assert new == PT2_SOURCE.replace(
        "from torch import nn\n", "from torch import nn\nimport torch\n").replace(
        "n = int(", "n = torch.sym_int(").replace(
        "assert (x > 0).all(), \"positive\"", "torch._assert_async((x > 0).all(), \"positive\")"
    ).replace("        print(\"n\", n)\n", "        if not torch.compiler.is_compiling():\n"
              "            print(\"n\", n)\n").replace("* float(", "* torch.sym_float(")
