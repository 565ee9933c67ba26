"""Unit tests for the pure parts of fx_lsp: positions, options, edits, hover text."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from lsprotocol import types

from fx_lsp.features import positions
from fx_lsp.features.code_actions import minimal_edit
from fx_lsp.features.hover import module_markdown
from fx_lsp.features.initialization_options import Options, client_settings, parse_options
from fx_lsp.server.settings import Settings
from fxcore.model.results import Failure, ModuleResult, Range

UTF16, UTF8, UTF32 = (
    types.PositionEncodingKind.Utf16,
    types.PositionEncodingKind.Utf8,
    types.PositionEncodingKind.Utf32,
)


@pytest.mark.parametrize(
    ("encoding", "character"), [(UTF16, 8), (UTF8, 10), (UTF32, 7)]
)
def test_a_column_after_an_emoji_counts_in_the_clients_units(
    encoding: str, character: int
) -> None:
    lines = ["x = 1", "s = '🙂'; len(x)"]
    # Column 8 (1-based characters) of line 2 is the "; " after the emoji's closing quote.
    position = positions.to_lsp(lines, 2, 8, encoding)
    assert position == types.Position(line=1, character=character)
    assert positions.from_lsp(lines, position, encoding) == (2, 8)


def test_positions_are_clamped_to_the_text() -> None:
    lines = positions.split_lines("a\r\nbc\rd\n")
    assert lines == ["a", "bc", "d", ""]
    assert positions.to_lsp(lines, 99, 99, UTF16) == types.Position(line=3, character=0)
    backwards = positions.range_to_lsp(lines, Range(2, 3, 2, 1), UTF16)
    assert backwards.start == backwards.end


def test_options_fail_closed_on_trust_and_keep_defaults_otherwise() -> None:
    options, errors = parse_options({"trusted": "false", "severity": "loud"})
    assert options.trusted is False
    assert options.severity == Options().severity
    assert len(errors) == 2 and "untrusted" in errors[0] + errors[1]
    project, errors = parse_options({"run": "onType"}, {"run": "onSave", "trusted": True})
    assert project.run == "onSave" and project.trusted is True and errors == []
    assert client_settings({"fxLsp": {"run": "onType"}}) == {"run": "onType"}
    assert client_settings("nonsense") == {}


@pytest.mark.parametrize(("client", "pyproject", "expected"), [
    ({}, "", False),
    ({"exportStrict": True}, "", True),
    ({"exportStrict": True}, "export-strict = false\n", False),  # the project's wins
    ({}, "export-strict = true\n", True),
    ({"exportStrict": True}, 'export-strict = "no"\n', True),  # invalid: the client's
])
def test_export_strict_reaches_the_engine_config_as_modes_does(
        tmp_path: Path, client: dict[str, object], pyproject: str, expected: bool) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[tool.fx-lsp]\n{pyproject}", encoding="utf-8")
    problems: list[str] = []
    settings = Settings(lambda path: None, lambda path: str(tmp_path),
                        lambda found, where: problems.extend(found))
    settings.apply({"fxLsp": {"trusted": True, **client}})
    assert settings.engine_config(str(tmp_path)).export_strict is expected
    assert bool(problems) == ("no" in pyproject)


@pytest.mark.parametrize(("client", "pyproject", "expected"), [
    ({}, "", "auto"),
    ({"moduleMode": "eval"}, "", "eval"),
    ({"moduleMode": "eval"}, 'module-mode = "train"\n', "train"),  # the project's wins
    ({"moduleMode": "train"}, 'module-mode = "no"\n', "train"),  # invalid: the client's
    ({"moduleMode": "no"}, "", "auto"),  # invalid: the default
])
def test_module_mode_reaches_the_engine_config_as_export_strict_does(
        tmp_path: Path, client: dict[str, object], pyproject: str, expected: str) -> None:
    (tmp_path / "pyproject.toml").write_text(f"[tool.fx-lsp]\n{pyproject}", encoding="utf-8")
    problems: list[str] = []
    settings = Settings(lambda path: None, lambda path: str(tmp_path),
                        lambda found, where: problems.extend(found))
    settings.apply({"fxLsp": {"trusted": True, **client}})
    assert settings.engine_config(str(tmp_path)).module_mode == expected
    assert bool(problems) == ("no" in pyproject or client.get("moduleMode") == "no")


def test_minimal_edit_rebuilds_the_new_text() -> None:
    generator = random.Random(7)
    for _ in range(500):
        old = "".join(generator.choice("ab\n🙂") for _ in range(generator.randint(0, 15)))
        new = "".join(generator.choice("ab\n🙂") for _ in range(generator.randint(0, 15)))
        edit = minimal_edit(old, new, UTF32)
        lines = old.split("\n")

        def offset(position: types.Position, lines: list[str] = lines) -> int:
            return sum(len(line) + 1 for line in lines[: position.line]) + position.character

        start, end = offset(edit.range.start), offset(edit.range.end)
        assert old[:start] + edit.new_text + old[end:] == new
        assert len(edit.new_text) <= len(new)


def test_a_failed_class_hover_keeps_quoted_output_as_a_block() -> None:
    failure = Failure(
        "/ws/net.py", 3, 7, 3, 10, code="FX102", kind="timeout",
        message="Tracing Net stopped: the worker took too long.\n"
        "Last output of the worker:\n    step 1\n    step 2",
    )
    module = ModuleResult(
        path="/ws/net.py", class_name="Net", qualified_name="net:Net", line=3, column=7,
        end_line=3, end_column=10, status="failed", failures=[failure],
    )
    text = module_markdown(module, "/ws/net.py")
    assert "**Net** is not FX-traceable: 1 failure" in text
    assert "Last output of the worker:\n  ```text\n  step 1\n  step 2\n  ```" in text
