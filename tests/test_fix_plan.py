"""fxcore.fix_plan: which quick fixes fit a failure, planned without an editor."""

from __future__ import annotations

from pathlib import Path

from fxcore.fix_plan import outline, plan
from fxcore.results import Failure, Frame, ModuleResult

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
