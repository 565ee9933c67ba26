"""A verdict moved with its class: every line of its file, and only of its file."""

from __future__ import annotations

import pytest

from fxcore.model.line_shift import Unmovable, shifted
from fxcore.model.results import (
    Arguments,
    Failure,
    Frame,
    GraphNode,
    GraphNodeInfo,
    Hint,
    ModuleResult,
    Range,
)

PATH = "/work/pkg/net.py"
OTHER = "/work/pkg/layers.py"


def verdict(offset: int, message: str = "") -> ModuleResult:
    def line(number: int) -> int:
        return number + offset

    frames = [Frame(path=PATH, line=line(20), column=5, end_line=line(20), end_column=9,
                    function="forward"),
              Frame(path=PATH, line=line(22), column=5, end_line=line(22), end_column=9,
                    function=f"torch_dynamo_resume_in_forward_at_{line(21)}"),
              Frame(path=OTHER, line=3, column=1, end_line=3, end_column=4,
                    function="torch_dynamo_resume_in_act_at_2")]
    failure = Failure(path=PATH, line=line(20), column=5, end_line=line(21), end_column=9,
                      code="FX004", kind="x", message=message or f"at net.py:{line(20)}",
                      frames=frames)
    return ModuleResult(
        path=PATH, line=line(10), column=7, end_line=line(10), end_column=10,
        class_name="Net", qualified_name="pkg.net:Net", status="failed",
        forward=Range(line(12), 9, line(12), 16),
        arguments=Arguments(origin="call-site", site=f"pkg/net.py:{line(40)}"),
        failures=[failure],
        hints=[Hint(path=PATH, line=line(15), column=1, end_line=line(15), end_column=2,
                    code="FX200", kind="unused", message="unused")],
        shape_errors=[Failure(path=OTHER, line=7, column=1, end_line=7, end_column=2,
                              code="FX300", kind="shape", message="layers.py:7")],
        line_nodes={(PATH, line(20)): [GraphNodeInfo("add", "call_function", "add")],
                    (OTHER, 3): []},
        graph=[GraphNode(name="add", op="call_function", target="add", path=PATH,
                         line=line(20)),
               GraphNode(name="relu", op="call_function", target="relu", path=OTHER, line=3),
               GraphNode(name="x", op="placeholder", target="x")],
        capture_notes=["see other_net.py:5"])


def test_every_line_of_the_file_moves_and_no_other() -> None:
    assert shifted(verdict(0), PATH, 3) == verdict(3)
    assert shifted(verdict(5), PATH, -5) == verdict(0)


def test_nothing_moves_by_zero_lines() -> None:
    original = verdict(0, message="the condition at line 20")
    assert shifted(original, PATH, 0) is original


def test_a_line_named_without_its_file_cannot_be_moved() -> None:
    with pytest.raises(Unmovable):
        shifted(verdict(0, message="the condition at line 20"), PATH, 1)


def test_a_line_of_another_file_of_the_same_name_cannot_be_moved() -> None:
    with pytest.raises(Unmovable):
        shifted(verdict(0, message="at vendored/net.py:20"), PATH, 1)
